/**
 * The render request's declarations (`src/request/`): every option's command-line text
 * parses to the SDK value, its default is the one documented, a bad value is refused
 * naming both the SDK field and the flag, the cross-field rules hold, the declared value
 * types agree with the SDK's option types (a compile error otherwise), the frame rate reaches
 * the render session, its page and the encoder parsed (a compile error otherwise), and every declared
 * flag is in the `--help` of each command that takes it (the live tree's, built in this
 * process; tests/integration/help_test.ts runs `vid render --help` as a subprocess).
 *
 * @module
 */

import { describe, it } from "node:test";
import assert from "node:assert/strict";
import type { CommandUnknownOpts } from "@commander-js/extra-typings";
import { buildProgram } from "../../src/cli/main.ts";
import { renderConfigFrom } from "../../src/cli/lambda_connection.ts";
import type { RenderConfig } from "../../src/lambda/config.ts";
import type { CloudRenderOptions } from "../../src/cloud/render.ts";
import type { RenderOptions } from "../../src/render/render.ts";
import type { StillOptions } from "../../src/render/still.ts";
import type { SessionOptions } from "../../src/render/session.ts";
import type { PageSpec } from "../../src/render/render_chunk.ts";
import type { EncoderOptions } from "../../src/render/encode.ts";
import { type FrameRate, FrameRateError } from "../../src/composition/frame_rate.ts";
import { configFrameRate } from "../../src/request/execution_input.ts";
import {
  ALL_OPTIONS,
  checkApiField,
  checkConfigField,
  checkFrameOrTime,
  checkHdrFormat,
  checkOption,
  checkResolutionFormat,
  flagOf,
  type OptionDeclaration,
  type OptionName,
  OPTIONS,
  type OptionValue,
  parseOption,
  RenderOptionError,
} from "../../src/request/mod.ts";
import { VidError } from "../../src/errors.ts";
import { parse as parseYaml } from "yaml";

/** One row: a flag text that parses to `value`, and a flag text that is refused. */
interface Case {
  good: string;
  value: unknown;
  bad: string;
  message: RegExp;
}

/** Every option that has a flag, with a good and a bad command-line value. */
const CASES: Partial<Record<OptionName, Case>> = {
  composition: { good: "main.html", value: "main.html", bad: " ", message: /non-empty string/ },
  output: { good: "out.mp4", value: "out.mp4", bad: "", message: /non-empty string/ },
  fps: { good: "29.97", value: 30000 / 1001, bad: "0", message: /rate from 1 to 240, got 0/ },
  format: {
    good: "gif",
    value: "gif",
    bad: "avi",
    message: /must be one of mp4, webm, mov, gif, png, got "avi"/,
  },
  videoFormat: {
    good: "mov",
    value: "mov",
    bad: "gif",
    message: /must be one of mp4, webm, mov, got "gif"/,
  },
  quality: { good: "high", value: "high", bad: "best", message: /draft, standard, high/ },
  jpegQuality: { good: "80", value: 80, bad: "101", message: /integer from 1 to 100, got 101/ },
  background: {
    good: "#ff0000",
    value: "#ff0000",
    bad: "blurple",
    message: /CSS colour .*got "blurple"/,
  },
  capture: { good: "screenshot", value: "screenshot", bad: "bogus", message: /auto, beginframe/ },
  frame: { good: "7", value: 7, bad: "-1", message: /integer from 0 up, got -1/ },
  time: { good: "2.5", value: 2.5, bad: "-1", message: /seconds >= 0/ },
  workers: { good: "3", value: 3, bad: "0", message: /positive integer, got 0/ },
  frames: {
    good: "10-59",
    value: { from: 10, to: 59 },
    bad: "9-2",
    message: /<from>-<to> .*got 9-2/,
  },
  width: { good: "640", value: 640, bad: "9000", message: /integer from 1 to 8192, got 9000/ },
  height: { good: "360", value: 360, bad: "x", message: /integer from 1 to 8192, got "x"/ },
  chunkSize: { good: "120", value: 120, bad: "1.5", message: /positive integer, got 1.5/ },
  maxParallelChunks: { good: "8", value: 8, bad: "0", message: /positive integer/ },
  targetChunkFrames: { good: "60", value: 60, bad: "-5", message: /positive integer/ },
  concurrency: { good: "2", value: 2, bad: "two", message: /positive integer, got "two"/ },
  maxConcurrent: { good: "10", value: 10, bad: "0", message: /positive integer/ },
  reservedConcurrency: { good: "4", value: 4, bad: "0", message: /positive integer/ },
  variables: { good: '{"a":1}', value: '{"a":1}', bad: "", message: /^$/ },
  variablesFile: { good: "v.json", value: "v.json", bad: "", message: /non-empty string/ },
  resolution: { good: "4k", value: "4k", bad: "8k", message: /one of 1080p, 4k, got "8k"/ },
  aspectRatio: { good: "9:16", value: "9:16", bad: "4:3", message: /16:9, 9:16, 1:1/ },
  callbackId: { good: "job-1", value: "job-1", bad: "x".repeat(256), message: /at most 255/ },
  idempotencyKey: { good: "k:1", value: "k:1", bad: "no spaces", message: /1 to 255 characters/ },
  pollInterval: { good: "0.5", value: 0.5, bad: "0", message: /positive number of seconds/ },
  maxWait: { good: "5", value: 5, bad: "-1", message: /positive number of minutes/ },
  loudness: { good: "-14", value: -14, bad: "-3", message: /from -70 to -5 LUFS .*got -3/ },
  scale: { good: "2", value: 2, bad: "5", message: /integer from 1 to 4, got 5/ },
  captionsOut: {
    good: "subs.srt",
    value: "subs.srt",
    bad: "subs.txt",
    message: /ending in .vtt or .srt, got "subs.txt"/,
  },
  // Seconds on the command line, milliseconds in the SDK.
  frameTimeoutMs: { good: "2.5", value: 2500, bad: "0", message: /seconds above 0, at most 3600/ },
};

/** On/off switches: no value to parse. */
const SWITCHES: OptionName[] = ["hdr", "strictVariables"];
/** Options of the SDK and the distributed config only, with no flag. */
const SDK_ONLY: OptionName[] = ["seed", "epochMs", "variableOverrides"];

describe("request: each option parses, defaults and refuses in one place", () => {
  it("every declared option is covered here, with a flag or as SDK-only", () => {
    const names = Object.keys(OPTIONS) as OptionName[];
    for (const name of names) {
      const declaration: OptionDeclaration<string, unknown> = OPTIONS[name];
      if (SDK_ONLY.includes(name)) {
        assert.equal(declaration.flags, undefined, name);
        continue;
      }
      assert.ok(declaration.flags, `${name} has no flag`);
      assert.ok(CASES[name] || SWITCHES.includes(name), `no case for ${name}`);
    }
  });

  for (const [name, c] of Object.entries(CASES) as [OptionName, Case][]) {
    it(`${name}: ${JSON.stringify(c.good)} parses, ${JSON.stringify(c.bad)} is refused`, () => {
      const declaration: OptionDeclaration<string, unknown> = OPTIONS[name];
      const flag = flagOf(declaration)!;
      const parsed = parseOption(declaration, c.good);
      if (typeof c.value === "number") assert.ok(Math.abs(Number(parsed) - c.value) < 1e-9);
      else assert.deepEqual(parsed, c.value);
      // The SDK accepts the value the flag gives.
      assert.deepEqual(checkOption(declaration, parsed), parsed);
      if (name === "variables") return; // any text parses; the JSON is read with the variables
      assert.throws(
        () => parseOption(declaration, c.bad),
        (error: unknown) => {
          assert.ok(error instanceof RenderOptionError && error instanceof VidError);
          assert.equal(error.field, declaration.key);
          assert.equal(error.flag, flag);
          assert.equal(error.exitCode, 2);
          assert.match(error.detail, c.message);
          assert.equal(error.message, `${declaration.key}: ${error.detail}`);
          assert.equal(error.cliMessage(), `${flag}: ${error.detail}`);
          return true;
        },
      );
    });
  }

  it("defaults are the documented ones", () => {
    assert.equal(OPTIONS.fps.default, 30);
    assert.equal(OPTIONS.format.default, "mp4");
    assert.equal(OPTIONS.videoFormat.default, "mp4");
    assert.equal(OPTIONS.quality.default, "standard");
    assert.equal(OPTIONS.jpegQuality.default, 90);
    assert.equal(OPTIONS.chunkSize.default, 240);
    assert.equal(OPTIONS.maxParallelChunks.default, 16);
    assert.equal(OPTIONS.maxConcurrent.default, 50);
    assert.equal(OPTIONS.resolution.default, "1080p");
    assert.equal(OPTIONS.pollInterval.default, 10);
    assert.equal(OPTIONS.maxWait.default, 60);
    assert.equal(OPTIONS.composition.default, "index.html");
    assert.equal(OPTIONS.seed.default, 1);
    assert.equal(OPTIONS.frameTimeoutMs.default, 30000);
  });

  it("the lambda flags become the distributed config under their declared config fields", () => {
    assert.deepEqual(
      renderConfigFrom({ fps: 25, format: "webm", chunkSize: 60, width: undefined }),
      { fps: 25, format: "webm", chunkSize: 60 },
    );
    for (const name of ["width", "height", "fps", "videoFormat", "quality", "chunkSize"] as const) {
      const field = OPTIONS[name].config!;
      assert.ok(field, name);
      const flags = { [OPTIONS[name].key]: name === "fps" ? 24 : "x" };
      assert.ok(field in renderConfigFrom(flags), `${name} -> config.${field}`);
    }
  });

  it("an unset value passes; a value of the wrong JSON type is refused by name", () => {
    assert.equal(checkOption(OPTIONS.fps, undefined), undefined);
    assert.throws(
      () => checkOption(OPTIONS.fps, true),
      /fps: must be a frame rate such as 30, 29.97 or 30000\/1001, got true/,
    );
    assert.throws(
      () => checkOption(OPTIONS.width, 1920.5, "outputSize.width"),
      (error: unknown) => error instanceof RenderOptionError && error.field === "outputSize.width",
    );
  });

  it("API and config fields name the value in their own words, with the same detail", () => {
    const details = [
      () => checkOption(OPTIONS.quality, "best"),
      () => checkApiField(OPTIONS.quality, { quality: "best" }),
      () => checkConfigField(OPTIONS.quality, { quality: "best" }),
    ].map((run) => {
      try {
        run();
      } catch (error) {
        assert.ok(error instanceof RenderOptionError);
        return [error.field, error.detail];
      }
      assert.fail("not refused");
    });
    assert.deepEqual(details.map(([field]) => field), ["quality", "quality", "config.quality"]);
    assert.equal(new Set(details.map(([, detail]) => detail)).size, 1);
    assert.equal(checkApiField(OPTIONS.aspectRatio, { aspect_ratio: null }), undefined);
  });
});

describe("request: cross-field rules, one function and one message each", () => {
  it("4k has no alpha path: only mp4", () => {
    checkResolutionFormat("4k", "mp4");
    checkResolutionFormat("1080p", "webm");
    assert.throws(
      () => checkResolutionFormat("4k", "mov"),
      (error: unknown) =>
        error instanceof RenderOptionError && error.field === "resolution" &&
        error.flag === "--resolution" &&
        /4k cannot be mov: the 4k path has no alpha channel\. Use mp4/.test(error.message),
    );
  });

  it("HDR is an mp4", () => {
    checkHdrFormat(true, "mp4");
    checkHdrFormat(false, "gif");
    assert.throws(
      () => checkHdrFormat(true, "webm"),
      (error: unknown) =>
        error instanceof RenderOptionError && error.field === "hdr" && error.flag === "--hdr",
    );
  });

  it("a still is picked by frame or by time", () => {
    checkFrameOrTime(3, undefined);
    assert.throws(() => checkFrameOrTime(3, 1.5), /give --frame or --time, not both/);
  });
});

/** True when `A` is assignable to `B`. */
type Assignable<A, B> = [A] extends [B] ? true : false;
/** Compile-time proof; `deno check tests/` fails when a declaration drifts from the SDK. */
const agreement: {
  fps: Assignable<OptionValue<typeof OPTIONS.fps>, RenderOptions["fps"]>;
  format: Assignable<OptionValue<typeof OPTIONS.format>, RenderOptions["format"]>;
  quality: Assignable<OptionValue<typeof OPTIONS.quality>, RenderOptions["quality"]>;
  workers: Assignable<OptionValue<typeof OPTIONS.workers>, RenderOptions["workers"]>;
  frames: Assignable<OptionValue<typeof OPTIONS.frames>, RenderOptions["frames"]>;
  jpegQuality: Assignable<OptionValue<typeof OPTIONS.jpegQuality>, StillOptions["jpegQuality"]>;
  time: Assignable<OptionValue<typeof OPTIONS.time>, StillOptions["time"]>;
  background: Assignable<OptionValue<typeof OPTIONS.background>, StillOptions["background"]>;
  configFps: Assignable<OptionValue<typeof OPTIONS.fps>, RenderConfig["fps"]>;
  configFormat: Assignable<OptionValue<typeof OPTIONS.videoFormat>, RenderConfig["format"]>;
  width: Assignable<OptionValue<typeof OPTIONS.width>, RenderConfig["width"]>;
  chunkSize: Assignable<OptionValue<typeof OPTIONS.chunkSize>, RenderConfig["chunkSize"]>;
  resolution: Assignable<
    OptionValue<typeof OPTIONS.resolution>,
    CloudRenderOptions["resolution"]
  >;
  aspectRatio: Assignable<
    OptionValue<typeof OPTIONS.aspectRatio>,
    CloudRenderOptions["aspectRatio"]
  >;
  maxWait: Assignable<OptionValue<typeof OPTIONS.maxWait>, CloudRenderOptions["maxWait"]>;
  loudness: Assignable<OptionValue<typeof OPTIONS.loudness>, RenderOptions["loudness"]>;
  configLoudness: Assignable<OptionValue<typeof OPTIONS.loudness>, RenderConfig["loudness"]>;
  cloudLoudness: Assignable<
    OptionValue<typeof OPTIONS.loudness>,
    CloudRenderOptions["loudness"]
  >;
  scale: Assignable<OptionValue<typeof OPTIONS.scale>, RenderOptions["scale"]>;
  configScale: Assignable<OptionValue<typeof OPTIONS.scale>, RenderConfig["scale"]>;
  configFrameTimeoutMs: Assignable<
    OptionValue<typeof OPTIONS.frameTimeoutMs>,
    RenderConfig["frameTimeoutMs"]
  >;
  frameTimeoutMs: Assignable<
    OptionValue<typeof OPTIONS.frameTimeoutMs>,
    RenderOptions["frameTimeoutMs"]
  >;
  stillFrameTimeoutMs: Assignable<
    OptionValue<typeof OPTIONS.frameTimeoutMs>,
    StillOptions["frameTimeoutMs"]
  >;
} = {
  fps: true,
  format: true,
  quality: true,
  workers: true,
  frames: true,
  jpegQuality: true,
  time: true,
  background: true,
  configFps: true,
  configFormat: true,
  width: true,
  chunkSize: true,
  resolution: true,
  aspectRatio: true,
  maxWait: true,
  loudness: true,
  configLoudness: true,
  cloudLoudness: true,
  scale: true,
  configScale: true,
  frameTimeoutMs: true,
  stillFrameTimeoutMs: true,
  configFrameTimeoutMs: true,
};

describe("request: the SDK's option types agree with the declarations", () => {
  it("checked at compile time (see `agreement`)", () => {
    assert.ok(Object.values(agreement).every((ok) => ok));
  });
});

/** True when `T` takes the parsed rate and no `fps` it would have to parse again. */
type TakesParsedRate<T extends { frameRate: unknown }> = "fps" extends keyof T ? false
  : Assignable<T["frameRate"], FrameRate>;
/**
 * Compile-time proof that the frame rate is parsed once, where the request comes in: the
 * render session, its page and the encoder take a `FrameRate`, never a number or text.
 */
const parsedOnce: {
  session: TakesParsedRate<SessionOptions>;
  page: TakesParsedRate<PageSpec>;
  encoder: TakesParsedRate<EncoderOptions>;
} = { session: true, page: true, encoder: true };

describe("request: the frame rate is parsed once", () => {
  it("the inner layers take a parsed FrameRate (checked at compile time, see `parsedOnce`)", () => {
    assert.ok(Object.values(parsedOnce).every((ok) => ok));
  });

  it("a distributed render's config.fps is read once, with config.fps's words", () => {
    assert.deepEqual(configFrameRate({ fps: "30000/1001" }), { num: 30000, den: 1001 });
    assert.deepEqual(configFrameRate({ fps: null }), { num: 30, den: 1 });
    assert.throws(
      () => configFrameRate({ fps: 500 }),
      (error: unknown) =>
        error instanceof FrameRateError && error.field === "config.fps" &&
        /must be a rate from 1 to 240, got 500/.test(error.message),
    );
  });
});

/** The command paths that take each declared option. */
const TAKEN_BY: Record<string, OptionName[]> = {
  "vid render": [
    "composition",
    "fps",
    "format",
    "quality",
    "workers",
    "frames",
    "variables",
    "variablesFile",
    "strictVariables",
    "hdr",
    "capture",
    "loudness",
    "scale",
    "captionsOut",
    "frameTimeoutMs",
  ],
  "vid still": [
    "composition",
    "frame",
    "time",
    "fps",
    "jpegQuality",
    "scale",
    "background",
    "variables",
    "variablesFile",
    "strictVariables",
    "capture",
    "frameTimeoutMs",
  ],
  "vid render-batch": [
    "composition",
    "format",
    "fps",
    "quality",
    "concurrency",
    "strictVariables",
    "capture",
  ],
  "vid cloud render": [
    "composition",
    "fps",
    "quality",
    "videoFormat",
    "resolution",
    "aspectRatio",
    "variables",
    "variablesFile",
    "strictVariables",
    "callbackId",
    "idempotencyKey",
    "pollInterval",
    "maxWait",
    "loudness",
  ],
  "vid lambda render": [
    "width",
    "height",
    "fps",
    "videoFormat",
    "quality",
    "variables",
    "variablesFile",
    "strictVariables",
    "reservedConcurrency",
    "maxParallelChunks",
    "targetChunkFrames",
    "chunkSize",
    "loudness",
    "scale",
  ],
  "vid lambda render-batch": [
    "width",
    "height",
    "fps",
    "videoFormat",
    "quality",
    "maxParallelChunks",
    "targetChunkFrames",
    "chunkSize",
    "maxConcurrent",
    "reservedConcurrency",
  ],
};

describe("request: every declared flag is in the help of the commands that take it", () => {
  it("each flag with its choices and default, in the live tree's --help", async () => {
    const program = await buildProgram();
    const find = (path: string): CommandUnknownOpts => {
      let command: CommandUnknownOpts = program;
      for (const name of path.split(" ").slice(1)) {
        const next = command.commands.find((c) => c.name() === name);
        assert.ok(next, `no command ${path}`);
        command = next;
      }
      return command;
    };
    const covered = new Set<string>();
    for (const [path, names] of Object.entries(TAKEN_BY)) {
      const help = find(path).helpInformation({ error: false }).replace(/\s+/g, " ");
      for (const name of names) {
        const declaration: OptionDeclaration<string, unknown> = OPTIONS[name];
        covered.add(name);
        assert.ok(help.includes(` ${declaration.flags} `), `${path} --help lacks ${name}`);
        for (const choice of declaration.choices ?? []) {
          assert.ok(help.includes(`"${choice}"`), `${path} ${declaration.flags}: ${choice}`);
        }
        if (declaration.default !== undefined && typeof declaration.default !== "boolean") {
          assert.match(help, /default: /, `${path} ${declaration.flags} states no default`);
        }
      }
    }
    // Every option with a flag is offered by at least one command.
    const flagged = ALL_OPTIONS.filter((d) => d.flags !== undefined && d.key !== "output");
    for (const declaration of flagged) {
      const name = (Object.keys(OPTIONS) as OptionName[]).find((n) => OPTIONS[n] === declaration)!;
      assert.ok(covered.has(name), `no command offers ${name}`);
    }
  });
});

describe("request: the hosted API's contract agrees with the declarations", () => {
  it("api/openapi.yaml RenderCreate lists each declared field with its choices and default", async () => {
    const spec = parseYaml(
      await Deno.readTextFile(new URL("../../api/openapi.yaml", import.meta.url)),
    ) as {
      components: {
        schemas: { RenderCreate: { properties: Record<string, Record<string, unknown>> } };
      };
    };
    const properties = spec.components.schemas.RenderCreate.properties;
    const withApi = ALL_OPTIONS.filter((d) => d.api !== undefined);
    assert.ok(withApi.length >= 8);
    for (const declaration of withApi) {
      const property = properties[declaration.api!];
      assert.ok(property, `RenderCreate has no ${declaration.api}`);
      if (declaration.choices) assert.deepEqual(property.enum, [...declaration.choices]);
      if (declaration.choices && declaration.default !== undefined) {
        assert.equal(property.default, declaration.default, declaration.api);
      }
    }
  });
});
