/**
 * One render request, declared once: the same bad value is refused with the same words on
 * every surface that accepts the option, each naming it in its own terms. The command line
 * (a real `vid` process: exit code 2, the flag), the SDK (`renderComposition`,
 * `checkCloudRenderOptions`: the option), the hosted API (a real `vid server` on loopback:
 * a 400 body naming the API field) and `validateConfig` (`config.<field>`).
 *
 * Three values: fps 0, the format "avi", and 4k with webm (which has alpha).
 *
 * @module
 */

import { after, before, describe, it } from "node:test";
import assert from "node:assert/strict";
import { checkCloudRenderOptions } from "../../src/cloud/render.ts";
import { ConfigError, type ExecutionInput, validateConfig } from "../../src/lambda/config.ts";
import { renderComposition } from "../../src/render/render.ts";
import { RenderOptionError } from "../../src/request/errors.ts";
import { VidError } from "../../src/errors.ts";
import { compositionHtml, makeProject, runVid } from "../helpers.ts";
import { createAccount, type ServerProcess, startServerProcess } from "../server_process.ts";

/** The words every surface uses for each bad value. */
const FPS_0 = "must be a rate from 1 to 240, got 0 (frames per second)";
const AVI = 'must be one of mp4, webm, mov, got "avi"';
const WEBM_4K =
  "4k cannot be webm: the 4k path has no alpha channel. Use mp4, or render alpha at native " +
  "resolution";

/** A closed loopback port: nothing may reach the network. */
const OFFLINE = { CLOUD_API_URL: "http://127.0.0.1:9", CLOUD_API_KEY: "vid_offline" };

describe("one bad value, one message on every surface", () => {
  let project: string;
  let dataDir: string;
  let server: ServerProcess;
  let apiKey: string;

  before(async () => {
    project = await makeProject(compositionHtml("<p>hi</p>", { duration: 1 }));
    dataDir = await Deno.makeTempDir({ prefix: "vid-request-server-" });
    server = await startServerProcess(dataDir);
    apiKey = await createAccount(dataDir, "surfaces@example.com", { credits: 100 });
  });

  after(async () => {
    await server?.stop();
    await Deno.remove(dataDir, { recursive: true }).catch(() => {});
    await Deno.remove(project, { recursive: true }).catch(() => {});
  });

  /** Posts a render body to the real server; returns status and the error body. */
  const submit = async (
    body: Record<string, unknown>,
  ): Promise<{ status: number; error: { code: string; field: string; message: string } }> => {
    const response = await fetch(`${server.url}/v3/vid/renders`, {
      method: "POST",
      headers: { authorization: `Bearer ${apiKey}`, "content-type": "application/json" },
      body: JSON.stringify({ asset_id: "ast_missing", ...body }),
    });
    const json = await response.json() as {
      error: { code: string; field: string; message: string };
    };
    return { status: response.status, error: json.error };
  };

  /** The error `run` throws, checked to be one of vid's input errors. */
  const thrown = async (run: () => unknown): Promise<VidError> => {
    try {
      await run();
    } catch (error) {
      assert.ok(error instanceof VidError, String(error));
      return error;
    }
    assert.fail("not refused");
  };

  const validate = (config: Record<string, unknown>) => () =>
    validateConfig({
      renderId: "r1",
      bucketName: "b",
      siteId: "site-0123456789abcdef",
      serveUrl: "https://b.s3.amazonaws.com/sites/site-0123456789abcdef/",
      outputKey: "renders/r1/out.mp4",
      config,
    } as ExecutionInput);

  it("fps 0: CLI (exit 2, --fps), SDK (fps), server (400, fps), validateConfig (config.fps)", async () => {
    const cli = await runVid(["render", project, "--fps", "0", "-o", `${project}/x.mp4`]);
    assert.equal(cli.code, 2, cli.stderr);
    assert.ok(cli.stderr.includes(`--fps: ${FPS_0}`), cli.stderr);

    const sdk = await thrown(() => renderComposition({ target: project, fps: 0 }));
    assert.ok(sdk instanceof RenderOptionError);
    assert.equal(sdk.field, "fps");
    assert.equal(sdk.flag, "--fps");
    assert.equal(sdk.detail, FPS_0);

    const api = await submit({ fps: 0 });
    assert.equal(api.status, 400);
    assert.equal(api.error.code, "vid_invalid_request");
    assert.equal(api.error.field, "fps");
    assert.equal(api.error.message, `fps: ${FPS_0}`);

    const config = await thrown(validate({ fps: 0 }));
    assert.ok(config instanceof ConfigError);
    assert.equal(config.field, "config.fps");
    assert.equal(config.message, `[validateConfig] config.fps: ${FPS_0}`);
    // Nothing was written by the refused render.
    assert.equal(await Deno.stat(`${project}/x.mp4`).catch(() => null), null);
  });

  it('format "avi": vid cloud render (exit 2), cloud SDK, server, validateConfig', async () => {
    const cli = await runVid(["cloud", "render", project, "--format", "avi"], { env: OFFLINE });
    assert.equal(cli.code, 2, cli.stderr);
    assert.ok(cli.stderr.includes(`--format: ${AVI}`), cli.stderr);

    const sdk = await thrown(() => checkCloudRenderOptions({ format: "avi" as unknown as "mp4" }));
    assert.equal(sdk.field, "format");
    assert.equal(sdk.flag, "--format");
    assert.equal(sdk.detail, AVI);

    const api = await submit({ format: "avi" });
    assert.equal(api.status, 400);
    assert.equal(api.error.field, "format");
    assert.equal(api.error.message, `format: ${AVI}`);

    const config = await thrown(validate({ format: "avi" }));
    assert.equal(config.field, "config.format");
    assert.equal(config.detail, AVI);
  });

  it("4k with webm: vid cloud render (exit 2), cloud SDK, server (400, resolution)", async () => {
    const cli = await runVid(
      ["cloud", "render", project, "--resolution", "4k", "--format", "webm", "--json"],
      { env: OFFLINE },
    );
    assert.equal(cli.code, 2, cli.stderr);
    const body = JSON.parse(cli.stdout) as { error: Record<string, string> };
    assert.equal(body.error.field, "--resolution");
    assert.equal(body.error.path, "resolution");
    assert.equal(body.error.message, `resolution: ${WEBM_4K}`);
    const human = await runVid(
      ["cloud", "render", project, "--resolution", "4k", "--format", "webm"],
      { env: OFFLINE },
    );
    assert.equal(human.code, 2);
    assert.ok(human.stderr.includes(`error: --resolution: ${WEBM_4K}`), human.stderr);

    const sdk = await thrown(() => checkCloudRenderOptions({ resolution: "4k", format: "webm" }));
    assert.equal(sdk.field, "resolution");
    assert.equal(sdk.detail, WEBM_4K);

    const api = await submit({ resolution: "4k", format: "webm" });
    assert.equal(api.status, 400);
    assert.equal(api.error.field, "resolution");
    assert.equal(api.error.message, `resolution: ${WEBM_4K}`);
  });
});
