/**
 * End-to-end tests of the `vid` command shell: help and version, `vid info` (human and
 * JSON forms, dropped declarations) and `vid validate` (warn vs strict, exit codes,
 * variable sources and their precedence, JSON error shape). Each test runs the CLI as a
 * subprocess and checks exit codes, stdout and stderr.
 *
 * @module
 */

import { after, before, describe, it } from "node:test";
import assert from "node:assert/strict";
import { compositionHtml, makeProject, ROOT, runVid } from "../helpers.ts";

const HELLO = `${ROOT}examples/hello`;

/** Declarations of the validate fixture: one of each type. */
const DECLARATIONS = [
  { id: "title", type: "string", label: "Title", default: "Default title" },
  { id: "subtitle", type: "string", label: "Subtitle", default: "Default subtitle" },
  { id: "count", type: "number", label: "Count", default: 3 },
  { id: "accent", type: "color", label: "Accent", default: "#ff0000" },
  { id: "show", type: "boolean", label: "Show", default: true },
  { id: "mode", type: "enum", label: "Mode", options: ["a", "b"], default: "a" },
];

/** Parses stdout that must be exactly one JSON document. */
function parseJson(stdout: string): Record<string, unknown> {
  try {
    return JSON.parse(stdout);
  } catch (error) {
    throw new Error(`stdout is not JSON (${(error as Error).message}):\n${stdout}`);
  }
}

/** Asserts the `{ ok: false, error: { name, message, field? } }` shape; returns `error`. */
function assertErrorJson(
  stdout: string,
  name: string,
): { name: string; message: string; field?: string; [key: string]: unknown } {
  const body = parseJson(stdout);
  assert.equal(body.ok, false, stdout);
  const error = body.error as { name: string; message: string; field?: string };
  assert.equal(typeof error, "object", stdout);
  assert.equal(error.name, name, stdout);
  assert.equal(typeof error.message, "string");
  assert.ok(error.message.length > 0);
  if ("field" in error) assert.equal(typeof error.field, "string");
  return error;
}

let fixture: string;
let dropped: string;

before(async () => {
  fixture = await makeProject(
    compositionHtml("", { id: "vars", variables: DECLARATIONS }),
    {
      "other.html": compositionHtml("", { id: "other", width: 1080, height: 1920, duration: 2 }),
      "vars.jsonc": `{
  // comments and trailing commas are allowed
  "title": "From file",
  "subtitle": "From file too", /* inline wins for this one */
}
`,
      "broken.jsonc": `{\n  "title": "x",\n  oops\n}\n`,
    },
  );
  dropped = await makeProject(compositionHtml("", {
    id: "dropping",
    variables: [
      { id: "title", type: "string", default: "kept" },
      { id: "data", type: "object", default: {} },
    ],
  }));
});

after(async () => {
  await Deno.remove(fixture, { recursive: true });
  await Deno.remove(dropped, { recursive: true });
});

describe("vid (program)", () => {
  it("--help lists the info, validate and render commands", async () => {
    const result = await runVid(["--help"]);
    assert.equal(result.code, 0, result.stderr);
    for (const command of ["info", "validate", "render"]) {
      assert.match(result.stdout, new RegExp(`^\\s+${command} \\[options\\]`, "m"), command);
    }
  });

  it("--version and -V print the version from deno.json", async () => {
    const { version } = JSON.parse(await Deno.readTextFile(`${ROOT}deno.json`));
    assert.match(version, /^\d+\.\d+\.\d+/);
    for (const flag of ["--version", "-V"]) {
      const result = await runVid([flag]);
      assert.equal(result.code, 0, result.stderr);
      assert.equal(result.stdout.trim(), version, flag);
    }
  });

  it("an unknown command or flag exits 2 naming it", async () => {
    const flag = await runVid(["validate", HELLO, "--bogus"]);
    assert.equal(flag.code, 2);
    assert.match(flag.stderr, /--bogus/);
    assert.equal(flag.stdout, "");
    const command = await runVid(["frobnicate"]);
    assert.equal(command.code, 2);
    assert.match(command.stderr, /frobnicate/);
  });
});

describe("vid info", () => {
  it("describes examples/hello: id, size, aspect ratio, duration and typed variables", async () => {
    const result = await runVid(["info", HELLO]);
    assert.equal(result.code, 0, result.stderr);
    assert.equal(result.stderr, "");
    const out = result.stdout;
    assert.match(out, /^hello\s/);
    assert.match(out, /1920x1080/);
    assert.match(out, /16:9/);
    assert.match(out, /duration\s+5 s/);
    assert.match(out, /variables\s+5\b/);
    for (
      const [id, type] of [
        ["title", "string"],
        ["accent", "color"],
        ["count", "number"],
        ["showSubtitle", "boolean"],
        ["layout", "enum"],
      ]
    ) {
      assert.match(out, new RegExp(`^\\s+${id}\\s+${type}\\s`, "m"), `${id} (${type})`);
    }
  });

  it("--json gives the same facts as one JSON document", async () => {
    const result = await runVid(["info", HELLO, "--json"]);
    assert.equal(result.code, 0, result.stderr);
    const info = parseJson(result.stdout);
    assert.equal(info.id, "hello");
    assert.equal(info.file, `${HELLO}/index.html`);
    assert.equal(info.width, 1920);
    assert.equal(info.height, 1080);
    assert.equal(info.duration, 5);
    assert.equal(info.aspectRatio, "16:9");
    assert.deepEqual(info.dropped, []);
    const variables = info.variables as { id: string; type: string; default?: unknown }[];
    assert.deepEqual(variables.map((v) => [v.id, v.type]), [
      ["title", "string"],
      ["accent", "color"],
      ["count", "number"],
      ["showSubtitle", "boolean"],
      ["layout", "enum"],
    ]);
    const layout = variables.find((v) => v.id === "layout") as { options?: { value: string }[] };
    assert.deepEqual(layout.options?.map((o) => o.value), ["center", "left"]);
  });

  it("-c picks another entry file of the project", async () => {
    const result = await runVid(["info", fixture, "-c", "other.html", "--json"]);
    assert.equal(result.code, 0, result.stderr);
    const info = parseJson(result.stdout);
    assert.equal(info.id, "other");
    assert.equal(info.aspectRatio, "9:16");
    assert.equal(info.duration, 2);
  });

  it("warns about a dropped declaration (type object) with its index and reason, exit 0", async () => {
    const result = await runVid(["info", dropped]);
    assert.equal(result.code, 0, result.stderr);
    assert.match(result.stderr, /^warning: declaration 1 \("data"\) dropped: .*"object"/m);
    assert.match(result.stdout, /variables\s+1 \(1 dropped\)/);
    assert.match(result.stdout, /^\s+title\s+string\s/m);
    assert.doesNotMatch(result.stdout, /^\s+data\s/m);

    const json = await runVid(["info", dropped, "--json"]);
    assert.equal(json.code, 0, json.stderr);
    assert.match(json.stderr, /declaration 1 \("data"\) dropped/);
    const info = parseJson(json.stdout);
    assert.deepEqual((info.variables as { id: string }[]).map((v) => v.id), ["title"]);
    const [entry] = info.dropped as { index: number; id: string; reason: string }[];
    assert.equal(entry.index, 1);
    assert.equal(entry.id, "data");
    assert.match(entry.reason, /unknown type "object"/);
  });

  it("a missing composition exits 1 naming the path (human and JSON)", async () => {
    const missing = `${fixture}/no-such-dir`;
    const human = await runVid(["info", missing]);
    assert.equal(human.code, 1);
    assert.ok(human.stderr.includes(missing), human.stderr);
    assert.equal(human.stdout, "");

    const json = await runVid(["info", missing, "--json"]);
    assert.equal(json.code, 1);
    const error = assertErrorJson(json.stdout, "CompositionError");
    assert.ok(error.message.includes(missing), error.message);
  });

  it("an invalid root attribute exits 1 naming the attribute", async () => {
    const dir = await makeProject(
      `<div data-composition-id="x" data-width="wide" data-height="180" data-duration="1"></div>`,
    );
    try {
      const result = await runVid(["info", dir, "--json"]);
      assert.equal(result.code, 1);
      const error = assertErrorJson(result.stdout, "CompositionError");
      assert.equal(error.field, "data-width");
      assert.match(error.message, /data-width="wide"/);
    } finally {
      await Deno.remove(dir, { recursive: true });
    }
  });
});

describe("vid validate", () => {
  it("exits 0 for a valid composition and prints the merged values", async () => {
    const result = await runVid(["validate", fixture, "--variables", '{"count":7}']);
    assert.equal(result.code, 0, result.stderr);
    assert.equal(result.stderr, "");
    assert.match(result.stdout, /^valid: vars \(320x180, 1 s, 6 variables\)/);
    assert.match(result.stdout, /^\s+title = "Default title"$/m);
    assert.match(result.stdout, /^\s+count = 7$/m);
    assert.match(result.stdout, /^\s+show = true$/m);
    assert.match(result.stdout, /^\s+mode = "a"$/m);
  });

  it("validates examples/hello with its defaults", async () => {
    const result = await runVid(["validate", HELLO]);
    assert.equal(result.code, 0, result.stderr);
    assert.match(result.stdout, /valid: hello/);
    assert.match(result.stdout, /title = "Hello from vid"/);
  });

  it("without strict, problems make a 'valid with N warnings' verdict on stdout, exit 0", async () => {
    const result = await runVid([
      "validate",
      fixture,
      "--variables",
      '{"count":"many","extra":1,"title":"Given"}',
    ]);
    assert.equal(result.code, 0, result.stderr);
    assert.equal(result.stderr, "");
    assert.match(result.stdout, /^valid with 2 warnings: vars \(320x180, 1 s, 6 variables\)$/m);
    assert.match(
      result.stdout,
      /^ {2}- count: "count" \(number\) expects a finite number, got "many"$/m,
    );
    assert.match(result.stdout, /^ {2}- extra: "extra" is not declared by the composition/m);
    assert.doesNotMatch(result.stdout, /- title:/);
    // Warn mode passes every override through as given.
    assert.match(result.stdout, /^\s+count = "many"$/m);
    assert.match(result.stdout, /^\s+extra = 1$/m);
    assert.match(result.stdout, /^\s+title = "Given"$/m);
  });

  it("five wrong values are five warnings, each with its field; the JSON verdict agrees", async () => {
    const variables = '{"tittle":"Hi","count":"7","accent":"reddish","show":"yes","mode":"c"}';
    const human = await runVid(["validate", fixture, "--variables", variables]);
    assert.equal(human.code, 0, human.stderr);
    assert.match(human.stdout, /^valid with 5 warnings: vars/);
    for (const field of ["tittle", "count", "accent", "show", "mode"]) {
      assert.match(human.stdout, new RegExp(`^  - ${field}: "${field}"`, "m"));
    }
    assert.match(
      human.stdout,
      /- tittle: "tittle" is not declared by the composition \(declared: title, subtitle, count, accent, show, mode\); did you mean "title"\?/,
    );
    const json = await runVid(["validate", fixture, "--variables", variables, "--json"]);
    assert.equal(json.code, 0, json.stderr);
    const body = parseJson(json.stdout);
    assert.equal(body.verdict, "valid-with-warnings");
    assert.equal(body.warnings, 5);
    assert.equal(body.valid, true);
    const problems = body.problems as { key: string; suggestion?: string }[];
    assert.deepEqual(problems.map((p) => p.key), ["tittle", "count", "accent", "show", "mode"]);
    assert.equal(problems[0].suggestion, "title");
    assert.equal(problems[1].suggestion, undefined);

    const strict = await runVid([
      "validate",
      fixture,
      "--variables",
      variables,
      "--strict-variables",
      "--json",
    ]);
    assert.equal(strict.code, 1);
    const strictBody = parseJson(strict.stdout);
    assert.equal(strictBody.verdict, "invalid");
    assert.equal(strictBody.warnings, 5);
    assert.equal(strictBody.valid, false);
  });

  it("--strict-variables exits 1 and lists every problem with key, expected and given", async () => {
    const variables = '{"count":"many","extra":true,"mode":"c","accent":"not-a-colour"}';
    const result = await runVid([
      "validate",
      fixture,
      "--variables",
      variables,
      "--strict-variables",
    ]);
    assert.equal(result.code, 1);
    assert.match(result.stdout, /^invalid \(4 problems\): vars/);
    assert.doesNotMatch(result.stdout, /^valid/m);
    for (
      const line of [
        /- count: "count" \(number\) expects a finite number, got "many"/,
        /- extra: "extra" is not declared by the composition/,
        /- mode: "mode" \(enum\) expects one of "a", "b", got "c"/,
        /- accent: "accent" \(color\) expects a CSS colour .*, got "not-a-colour"/,
      ]
    ) {
      assert.match(result.stdout, line);
    }

    const json = await runVid([
      "validate",
      fixture,
      "--variables",
      variables,
      "--strict-variables",
      "--json",
    ]);
    assert.equal(json.code, 1);
    const body = parseJson(json.stdout);
    assert.equal(body.valid, false);
    const error = assertErrorJson(json.stdout, "StrictVariablesError");
    assert.equal(error.field, "variables.count");
    const problems = body.problems as { key: string; expected: string; given: string }[];
    assert.deepEqual(problems.map((p) => [p.key, p.given]), [
      ["count", '"many"'],
      ["extra", "true"],
      ["mode", '"c"'],
      ["accent", '"not-a-colour"'],
    ]);
    assert.equal(problems[0].expected, "a finite number");
    assert.equal(problems[1].expected, "a declared variable");
    assert.equal(problems[2].expected, 'one of "a", "b"');
  });

  it("--strict-variables passes (exit 0) when every override matches", async () => {
    const result = await runVid([
      "validate",
      fixture,
      "--variables",
      '{"count":2,"accent":"rgb(0, 128, 255)","mode":"b","show":false}',
      "--strict-variables",
      "--json",
    ]);
    assert.equal(result.code, 0, result.stderr);
    const body = parseJson(result.stdout);
    assert.equal(body.ok, true);
    assert.equal(body.strict, true);
    assert.deepEqual(body.problems, []);
    assert.equal("error" in body, false);
  });

  it("with strict checking, keys of a dropped declaration are undeclared", async () => {
    const result = await runVid([
      "validate",
      dropped,
      "--variables",
      '{"data":"{\\"a\\":1}"}',
      "--strict-variables",
    ]);
    assert.equal(result.code, 1);
    assert.match(result.stdout, /declaration 1 \("data"\) dropped/);
    assert.match(result.stdout, /"data" is not declared by the composition \(declared: title\)$/m);
  });

  it("a dropped declaration is a warning, with or without --strict-variables, as in render", async () => {
    const warned = await runVid(["validate", dropped]);
    assert.equal(warned.code, 0, warned.stderr);
    assert.match(warned.stdout, /^valid with 1 warning: dropping/);
    assert.match(
      warned.stdout,
      /^ {2}- data-composition-variables\[1\]: declaration 1 \("data"\) dropped: unknown type "object"/m,
    );
    // Strict checking is about the --variables keys: validate and render agree on it.
    const strict = await runVid(["validate", dropped, "--strict-variables"]);
    assert.equal(strict.code, 0, strict.stdout);
    assert.match(strict.stdout, /^valid with 1 warning: dropping/);
    const rendered = await runVid([
      "render",
      dropped,
      "--strict-variables",
      "--frames",
      "0-0",
      "-o",
      `${dropped}/one.mp4`,
    ]);
    assert.equal(rendered.code, 0, rendered.stderr);
    assert.match(
      rendered.stderr,
      /^warning: declaration 1 \("data"\) dropped: .*; the page reads getVariables\(\)\.data as undefined$/m,
    );
    await Deno.remove(`${dropped}/one.mp4`);
  });

  it("malformed --variables JSON exits 2 naming the flag", async () => {
    const human = await runVid(["validate", fixture, "--variables", "{title:"]);
    assert.equal(human.code, 2);
    assert.match(human.stderr, /--variables is not valid JSON/);

    const notObject = await runVid(["validate", fixture, "--variables", "[1,2]"]);
    assert.equal(notObject.code, 2);
    assert.match(notObject.stderr, /--variables must be a JSON object/);

    const json = await runVid(["validate", fixture, "--variables", "{title:", "--json"]);
    assert.equal(json.code, 2);
    const error = assertErrorJson(json.stdout, "VariablesInputError");
    assert.equal(error.field, "--variables");
  });

  it("--variables-file reads JSONC; precedence is defaults < file < inline", async () => {
    const result = await runVid([
      "validate",
      fixture,
      "--variables-file",
      `${fixture}/vars.jsonc`,
      "--variables",
      '{"subtitle":"Inline"}',
      "--json",
    ]);
    assert.equal(result.code, 0, result.stderr);
    const body = parseJson(result.stdout);
    assert.equal(body.ok, true);
    assert.deepEqual(body.values, {
      title: "From file",
      subtitle: "Inline",
      count: 3,
      accent: "#ff0000",
      show: true,
      mode: "a",
    });
    assert.deepEqual(body.problems, []);

    const fileOnly = await runVid([
      "validate",
      fixture,
      "--variables-file",
      `${fixture}/vars.jsonc`,
    ]);
    assert.equal(fileOnly.code, 0, fileOnly.stderr);
    assert.match(fileOnly.stdout, /^\s+subtitle = "From file too"$/m);
  });

  it("a malformed or missing --variables-file exits 2 naming the file and position", async () => {
    const broken = await runVid([
      "validate",
      fixture,
      "--variables-file",
      `${fixture}/broken.jsonc`,
    ]);
    assert.equal(broken.code, 2);
    assert.ok(broken.stderr.includes(`${fixture}/broken.jsonc:3:`), broken.stderr);

    const missing = await runVid([
      "validate",
      fixture,
      "--variables-file",
      `${fixture}/absent.json`,
      "--json",
    ]);
    assert.equal(missing.code, 2);
    const error = assertErrorJson(missing.stdout, "VariablesInputError");
    assert.equal(error.field, "--variables-file");
    assert.ok(error.message.includes("absent.json"), error.message);
  });

  it("a missing composition exits 1 naming the path", async () => {
    const empty = await Deno.makeTempDir({ prefix: "vid-test-" });
    try {
      const human = await runVid(["validate", empty]);
      assert.equal(human.code, 1);
      assert.ok(human.stderr.includes(`${empty}/index.html`), human.stderr);

      const entry = await runVid(["validate", fixture, "-c", "nope.html", "--json"]);
      assert.equal(entry.code, 1);
      const error = assertErrorJson(entry.stdout, "CompositionError");
      assert.ok(error.message.includes(`${fixture}/nope.html`), error.message);
    } finally {
      await Deno.remove(empty, { recursive: true });
    }
  });

  it("-c validates another entry of the project", async () => {
    const result = await runVid(["validate", fixture, "-c", "other.html"]);
    assert.equal(result.code, 0, result.stderr);
    assert.match(result.stdout, /^valid: other \(1080x1920, 2 s, 0 variables\)/);
  });
});
