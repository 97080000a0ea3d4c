/**
 * What the API handlers and the render queue share.
 *
 * @module
 */

import type { DiskSpace } from "./storage/disk_space.ts";
import type { Database } from "./database/mod.ts";
import type { Storage } from "./storage/storage.ts";
import { HOSTED_UPLOAD_LIMIT_BYTES } from "../project/package.ts";
import type { ServerMetrics } from "./queue/metrics.ts";
import type { TrustedProxies } from "./http/client_address.ts";

/** Upload limit of a project zip: 200 MB, the hosted service's documented limit (one figure). */
export const MAX_UPLOAD_BYTES: number = HOSTED_UPLOAD_LIMIT_BYTES;
/** Largest JSON request body the API reads: 1 MiB (larger is a 413). */
export const MAX_JSON_BODY_BYTES = 1024 * 1024;
/** Longest `filename` an asset may be given, in characters. */
export const MAX_FILENAME_LENGTH = 255;
/** Longest `composition` path, in characters. */
export const MAX_COMPOSITION_LENGTH = 1024;
/**
 * Project zips read and checked at once (uploads and `url` sources); more wait their turn,
 * so memory stays bounded by this many 200 MB uploads whatever tenants send at once.
 */
export const MAX_CONCURRENT_PROJECT_CHECKS = 4;
/** How long an upload URL stays valid. */
export const UPLOAD_URL_SECONDS = 3600;
/** How long a minted download URL stays valid. */
export const DOWNLOAD_URL_SECONDS = 900;
/** Credits a render costs per second of output at 1080p; 4k costs 1.5 times that. */
export const CREDITS_PER_SECOND = 1;
/** Credits per render by resolution: 4k is billed at 1.5 times 1080p. */
export const RESOLUTION_MULTIPLIER: Readonly<Record<"1080p" | "4k", number>> = {
  "1080p": 1,
  "4k": 1.5,
};

/** Longest render a server accepts by default, in seconds (`vid server --max-duration`). */
export const DEFAULT_MAX_DURATION_SECONDS = 600;
/** Most frames per render a server accepts by default (`--max-frames`): 600 s at 60 fps. */
export const DEFAULT_MAX_FRAMES = 36_000;
/** Renders one account may have waiting by default (`--max-queued-per-account`). */
export const DEFAULT_MAX_QUEUED_PER_ACCOUNT = 100;
/** Seconds of a render's default budget before its frames are counted. */
export const BUDGET_BASE_SECONDS = 120;
/** Seconds of a render's default budget per frame. */
export const BUDGET_SECONDS_PER_FRAME = 1;

/** What an instance does: serve the API, render, or both. */
export type ServerRole = "api" | "worker" | "all";

/** The roles `--role` takes, in the order the help lists them. */
export const SERVER_ROLES: readonly ServerRole[] = ["api", "worker", "all"];

/** `Retry-After` of a 429 `vid_too_many_renders`: about one short render's time. */
export const QUEUE_FULL_RETRY_SECONDS = 10;

/** What one render and one account may ask of a server (its `--max-…` flags). */
export interface ServerLimits {
  /** Longest render, in seconds of output; longer is a 422 before any charge. */
  maxDurationSeconds: number;
  /** Most frames per render; more is a 422 before any charge. */
  maxFrames: number;
  /** Renders of one account rendering at once, so one account cannot take every worker. */
  maxRendersPerAccount: number;
  /** Renders one account may have queued; one more is a 429 `vid_too_many_renders`. */
  maxQueuedPerAccount: number;
}

/**
 * The limits of a server whose backend runs `slots` renders at once, `given` ones kept:
 * an account may render on half the slots (at least 1) by default.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 *
 * assert.equal(serverLimits({}, 1).maxRendersPerAccount, 1);
 * assert.equal(serverLimits({}, 4).maxRendersPerAccount, 2);
 * assert.equal(serverLimits({ maxDurationSeconds: 60 }, 4).maxDurationSeconds, 60);
 * ```
 */
export function serverLimits(given: Partial<ServerLimits>, slots: number): ServerLimits {
  return {
    maxDurationSeconds: given.maxDurationSeconds ?? DEFAULT_MAX_DURATION_SECONDS,
    maxFrames: given.maxFrames ?? DEFAULT_MAX_FRAMES,
    maxRendersPerAccount: given.maxRendersPerAccount ?? Math.max(1, Math.floor(slots / 2)),
    maxQueuedPerAccount: given.maxQueuedPerAccount ?? DEFAULT_MAX_QUEUED_PER_ACCOUNT,
  };
}

/** Settings of a running server. */
export interface ServerContext {
  db: Database;
  storage: Storage;
  /** HMAC secret for upload/download URLs and webhook signatures. */
  secret: string;
  /** Base URL clients reach the server at, without a trailing slash. */
  publicUrl: string;
  /** Folder for temp work. */
  workDir: string;
  /** Allow `http://` callback URLs, and callbacks to loopback (development). */
  allowHttpCallbacks: boolean;
  /**
   * Lift the network guard: `url` sources, render pages, remote media and webhooks may
   * reach private and loopback addresses (development).
   */
  allowPrivateUrls: boolean;
  /** What one render and one account may ask (see {@linkcode serverLimits}). */
  limits: ServerLimits;
  /** Tells the render queue that work is waiting. */
  wake(): void;
  /** Tells the webhook sender that a delivery was recorded (see `webhook_outbox.ts`). */
  wakeWebhooks?(): void;
  /** Stops a render in flight (it was deleted); a no-op for one that is not running. */
  cancelRender?(renderId: string): void;
  /** What `GET /metrics` reports (see `metrics.ts`). */
  metrics?: ServerMetrics;
  /** Bearer token `GET /metrics` requires (`--metrics-token`); open when unset. */
  metricsToken?: string;
  /**
   * Proxies whose `X-Forwarded-For` names the client the throttles count against
   * (`--trusted-proxy`; see `client_address.ts`). @default none: the peer is the client
   */
  trustedProxies?: TrustedProxies;
  /** This run's name on the leases and idempotency claims it holds (see `leases.ts`). */
  owner?: string;
  /**
   * The data folders' free space against `--min-free-space` (see `disk_space.ts`): `/readyz`
   * and the upload check read it. @default not checked
   */
  disk?: DiskSpace;
  /** Why this instance no longer takes requests (it is stopping), else `undefined`. */
  stopping?(): string | undefined;
}

/** Output frame size of each resolution and aspect ratio. */
export const OUTPUT_SIZES: Readonly<
  Record<
    "1080p" | "4k",
    Readonly<Record<"16:9" | "9:16" | "1:1", { width: number; height: number }>>
  >
> = {
  "1080p": {
    "16:9": { width: 1920, height: 1080 },
    "9:16": { width: 1080, height: 1920 },
    "1:1": { width: 1080, height: 1080 },
  },
  "4k": {
    "16:9": { width: 3840, height: 2160 },
    "9:16": { width: 2160, height: 3840 },
    "1:1": { width: 2160, height: 2160 },
  },
};
