/**
 * Pulumi program of `vid lambda deploy`: the render bucket, the render function, the Step
 * Functions state machine and their IAM roles, in the caller's AWS account and region.
 *
 * `vid lambda deploy` builds the packaged worker into `../dist/worker` first (config
 * `workerPath`; `deno task build:worker`), sets `memory` and `concurrency` from its flags,
 * runs `pulumi up` here and prints the two outputs, which the SDK takes as `bucketName` and
 * `stateMachineArn`. A `workerPath` without `vid-artifact.json` stops the program with the
 * command that builds it.
 *
 * @module
 */

import * as pulumi from "@pulumi/pulumi";
import { readArtifactManifest } from "../worker/artifact_manifest.ts";
import { readStackSettings } from "./config.ts";
import { createRenderStack } from "./stack.ts";

const settings = readStackSettings(new pulumi.Config());
const stack = createRenderStack(
  "vid",
  settings,
  readArtifactManifest(settings.workerPath),
);

/** Name of the render bucket (the SDK's `bucketName`). */
export const RenderBucketName: pulumi.Output<string> = stack.bucket.bucket;
/** ARN of the render state machine (the SDK's `stateMachineArn`). */
export const RenderStateMachineArn: pulumi.Output<string> = stack.stateMachine.arn;
