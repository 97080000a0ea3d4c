/**
 * `deploy.ts`, the Automation API engine of `vid lambda deploy`: its flags become the stack's
 * config (desired state: no `--concurrency` removes the reserved concurrency), bad flags are
 * refused naming the flag, and without the Pulumi CLI (absent here, and it cannot be
 * installed) it exits 1 saying where to install it. `up` itself needs the CLI and an AWS
 * account and is not run here.
 *
 * @module
 */

import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { fileURLToPath } from "node:url";
import { describe, it } from "node:test";
import { deployConfig, parseDeployArgs, PULUMI_INSTALL_URL } from "../deploy.ts";

const PROGRAM_DIR = fileURLToPath(new URL("../", import.meta.url));

describe("deploy.ts", () => {
  it("turns --memory, --concurrency, --region and --worker-path into stack config", () => {
    const request = parseDeployArgs([
      "--stack",
      "prod",
      "--region",
      "eu-west-1",
      "--memory",
      "4096",
      "--concurrency",
      "8",
      "--worker-path",
      "../dist/worker",
    ], "/repo/pulumi");
    assert.deepEqual(request, {
      stack: "prod",
      region: "eu-west-1",
      memory: 4096,
      concurrency: 8,
      workerPath: "/repo/dist/worker",
    });
    assert.deepEqual(deployConfig(request), {
      set: {
        "aws:region": { value: "eu-west-1" },
        "vid-lambda:memory": { value: "4096" },
        "vid-lambda:workerPath": { value: "/repo/dist/worker" },
        "vid-lambda:concurrency": { value: "8" },
      },
      remove: [],
    });
  });

  it("defaults to stack dev, 10240 MB, ../dist/worker, and removes an earlier concurrency", () => {
    const request = parseDeployArgs(["--region", "us-east-1"], "/repo/pulumi");
    assert.equal(request.stack, "dev");
    assert.equal(request.memory, 10240);
    assert.equal(request.workerPath, "/repo/dist/worker");
    assert.equal(request.concurrency, undefined);
    assert.deepEqual(deployConfig(request).remove, ["vid-lambda:concurrency"]);
  });

  it("refuses out-of-range memory, a zero concurrency and an odd region, naming the flag", () => {
    assert.throws(() => parseDeployArgs(["--memory", "99999"]), /--memory: .*128 to 10240/);
    assert.throws(() => parseDeployArgs(["--memory", "12.5"]), /--memory/);
    assert.throws(() => parseDeployArgs(["--concurrency", "0"]), /--concurrency: .*1 or more/);
    assert.throws(() => parseDeployArgs(["--region", "mars"]), /--region: not an AWS region/);
    assert.throws(() => parseDeployArgs(["--bogus"]), /flags: .*bogus/);
  });

  it("without the Pulumi CLI exits 1 saying where to install it", () => {
    const out = spawnSync(process.execPath, ["--import", "tsx", "deploy.ts", "--memory", "2048"], {
      cwd: PROGRAM_DIR,
      env: { PATH: "/nonexistent", HOME: process.env.HOME },
      encoding: "utf8",
      timeout: 120_000,
    });
    assert.equal(out.status, 1, out.stderr);
    assert.match(out.stderr, /Pulumi CLI \(`pulumi`\) is not on PATH/);
    assert.ok(out.stderr.includes(PULUMI_INSTALL_URL), out.stderr);
    assert.equal(out.stdout, "");
  });

  it("exits 2 on a bad flag before looking for the CLI", () => {
    const out = spawnSync(process.execPath, ["--import", "tsx", "deploy.ts", "--memory", "64"], {
      cwd: PROGRAM_DIR,
      env: { PATH: "/nonexistent", HOME: process.env.HOME },
      encoding: "utf8",
      timeout: 120_000,
    });
    assert.equal(out.status, 2, out.stderr);
    assert.match(out.stderr, /--memory: expected a whole number from 128 to 10240, got 64/);
  });
});
