/**
 * Reads the stack settings from Pulumi config (`pulumi config set vid-lambda:<key> <value>`),
 * applying the spec's defaults and AWS Lambda's limits. `vid lambda deploy --memory` and
 * `--concurrency` set `memory` and `concurrency`.
 *
 * | key | default | range |
 * |---|---|---|
 * | `memory` | 10240 | 128 to 10240 (MB) |
 * | `timeout` | 900 | 1 to 900 (seconds) |
 * | `concurrency` | unset (unreserved) | 1 or more |
 * | `workerPath` | `../dist/worker` | directory of the worker bundle |
 * | `handler` | `index.handler` | |
 * | `layers` | `[]` | JSON array of layer ARNs |
 * | `chunkPrefix` | `chunks/` | key prefix of temporary chunk objects |
 * | `chunkExpirationDays` | 1 | 1 or more |
 * | `logRetentionDays` | 14 | a CloudWatch Logs retention value |
 *
 * @module
 */

import type * as pulumi from "@pulumi/pulumi";
import {
  MAX_MEMORY_MB,
  MAX_TIMEOUT_SECONDS,
  MIN_MEMORY_MB,
  type RenderStackSettings,
} from "./stack.ts";

/** A config value of the stack that has the wrong type or shape. */
export class StackConfigError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "StackConfigError";
  }
}

function integer(
  config: pulumi.Config,
  key: string,
  range: { min: number; max?: number },
): number | undefined {
  const value = config.getNumber(key, range);
  if (value !== undefined && !Number.isInteger(value)) {
    throw new StackConfigError(
      `Configuration '${config.name}:${key}' value '${value}' is not a whole number`,
    );
  }
  return value;
}

function stringList(config: pulumi.Config, key: string): string[] {
  const value = config.getObject<unknown>(key);
  if (value === undefined) return [];
  if (!Array.isArray(value) || !value.every((item) => typeof item === "string")) {
    throw new StackConfigError(
      `Configuration '${config.name}:${key}' must be a JSON array of strings`,
    );
  }
  return value;
}

/**
 * The render stack settings in `config`, with defaults for unset keys.
 *
 * @example
 * ```ts
 * const settings = readStackSettings(new pulumi.Config());
 * settings.memory; // 10240 unless `vid-lambda:memory` is set
 * ```
 */
export function readStackSettings(config: pulumi.Config): RenderStackSettings {
  return {
    memory: integer(config, "memory", { min: MIN_MEMORY_MB, max: MAX_MEMORY_MB }) ??
      MAX_MEMORY_MB,
    timeout: integer(config, "timeout", { min: 1, max: MAX_TIMEOUT_SECONDS }) ??
      MAX_TIMEOUT_SECONDS,
    concurrency: integer(config, "concurrency", { min: 1 }),
    workerPath: config.get("workerPath") ?? "../dist/worker",
    handler: config.get("handler") ?? "index.handler",
    layers: stringList(config, "layers"),
    chunkPrefix: config.get("chunkPrefix") ?? "chunks/",
    chunkExpirationDays: integer(config, "chunkExpirationDays", { min: 1 }) ?? 1,
    logRetentionDays: integer(config, "logRetentionDays", { min: 1 }) ?? 14,
  };
}
