/**
 * `vid server`: run the hosted render API on this host, and its admin commands
 * (`vid server users add`, `vid server keys create|list|revoke`). The admin commands
 * address the server's data folder with the same `--data-dir` as `vid server` (SQLite
 * allows them while the server runs), and never print a key after `keys create`. They load
 * the database alone; the server itself is imported when `vid server` starts it.
 *
 * @module
 */

import { type Command, InvalidArgumentError, type OptionValues } from "@commander-js/extra-typings";
import { type MinFreeSpace, parseMinFreeSpace } from "../server/storage/disk_space.ts";
import {
  addUser,
  type ApiKeyInfo,
  createApiKey,
  listApiKeys,
  revokeApiKey,
} from "../server/auth/accounts.ts";
import { openDataDir } from "../server/database/data_dir.ts";
import type { startServer } from "../server/server.ts";
import { DEFAULT_LEASE_SECONDS } from "../server/queue/leases.ts";
import { DATABASE_ENV, redactUrl } from "../server/database/mod.ts";
import {
  DEFAULT_LAMBDA_MAX_IN_FLIGHT,
  DEFAULT_LAMBDA_POLL_INTERVAL_MS,
  type RenderBackendConfig,
  RenderBackendConfigError,
  type RenderBackendFlags,
  resolveRenderBackend,
} from "../server/queue/render_backend.ts";
import {
  BUDGET_BASE_SECONDS,
  BUDGET_SECONDS_PER_FRAME,
  DEFAULT_MAX_DURATION_SECONDS,
  DEFAULT_MAX_FRAMES,
  DEFAULT_MAX_QUEUED_PER_ACCOUNT,
  SERVER_ROLES,
  type ServerRole,
} from "../server/context.ts";
import { EXIT, integerIn, positiveInteger, reportError } from "./shared.ts";
import { cliOption } from "./request_flags.ts";
import { OPTIONS } from "../request/options.ts";
import { captureConsole, configureLog, log, LOG_FORMATS, type LogFormat } from "../server/log.ts";
import { listenForStop, runUntilStopped, shutdownTimeoutOption } from "./shutdown.ts";

const DEFAULT_DATA_DIR = "vid-data";

/**
 * Seconds of `--shutdown-timeout` kept for what follows the drain of requests (listener,
 * renders, database); requests in flight get the rest, at least half of it.
 */
const DRAIN_RESERVE_SECONDS = 3;

/**
 * How long a stopping `vid server` lets requests in flight finish: its `--shutdown-timeout`
 * less {@linkcode DRAIN_RESERVE_SECONDS}, at least half of it.
 */
function drainSecondsOf(shutdownTimeout: number): number {
  return Math.max(shutdownTimeout / 2, shutdownTimeout - DRAIN_RESERVE_SECONDS);
}

/** Parses `--min-free-space`, naming the flag on error. */
function minFreeSpaceFlag(value: string): MinFreeSpace {
  try {
    return parseMinFreeSpace(value);
  } catch (error) {
    throw new InvalidArgumentError((error as Error).message);
  }
}
/** Shortest `--metrics-token`: long enough that guessing it is hopeless. */
const MIN_METRICS_TOKEN = 16;
const METRICS_TOKEN = new RegExp(`^[\\x21-\\x7e]{${MIN_METRICS_TOKEN},}$`);

async function readStdin(): Promise<string> {
  const text = await new Response(Deno.stdin.readable).text();
  return text.replace(/\r?\n$/, "");
}

/** Registers `vid server` and its admin subcommands. */
export function registerServer(program: Command): void {
  const base = program
    .command("server")
    .summary("Run the hosted render API (/v3) on this host.")
    .description(
      "Run the hosted render API (/v3) on this host: SQLite state, local or S3 storage, " +
        "renders on this machine or on the distributed backend (--render-backend lambda).\n\n" +
        "Admin: `vid server users add`, `vid server keys create|list|revoke`.",
    )
    .option(
      "--port <n>",
      "port to listen on (0 picks a free one)",
      integerIn("--port", 0, 65535),
      8787,
    )
    .option("--host <address>", "address to listen on", "127.0.0.1")
    .option("--data-dir <dir>", "database, secret and stored files", DEFAULT_DATA_DIR)
    .option("--database <url>", DATABASE_HELP)
    .option(
      "--role <role>",
      "api (serve /v3, enqueue), worker (render; serves only /healthz, /readyz, /metrics) " +
        `or all (default: all; env ${ROLE_ENV})`,
    )
    .option(
      "--workers <n>",
      "renders in parallel on this machine (local backend)",
      positiveInteger("--workers"),
      1,
    )
    .option(
      "--lease-seconds <s>",
      "a render belongs to its worker while the worker renews this lease (every third of " +
        "it); one whose worker dies or loses the database is taken over when it runs out",
      positiveInteger("--lease-seconds"),
      DEFAULT_LEASE_SECONDS,
    );
  const server = withLambdaOptions(withAccessOptions(withRenderOptions(base)))
    // `vid server users add … --data-dir x`: the subcommand's own --data-dir, not this one.
    .enablePositionalOptions()
    .action(runServer);

  registerUsers(server);
  registerKeys(server);
}

/** `vid server`'s flags of one render and its limits: deadlines, chunks, shutdown, sizes. */
function withRenderOptions<
  Args extends unknown[],
  Opts extends OptionValues,
  Global extends OptionValues,
>(
  command: Command<Args, Opts, Global>,
) {
  return command
    .addOption(cliOption(OPTIONS.frameTimeoutMs, {
      help: "seconds one frame's seek and capture may take; past it the page counts as hung " +
        "(a busy script), its browser and ffmpeg are killed and the render fails, refunded " +
        "(lambda backend: each chunk worker's deadline)",
    }))
    .option(
      "--max-render-seconds <s>",
      "wall-clock budget of one render; past it the render is stopped and fails, refunded " +
        `(lambda backend: its execution is stopped; default: ${BUDGET_BASE_SECONDS} + ` +
        `${BUDGET_SECONDS_PER_FRAME} per frame, frames = duration x fps)`,
      positiveInteger("--max-render-seconds"),
    )
    .addOption(cliOption(OPTIONS.chunkSize, {
      help: "spread a render of more frames than this over the workers of every instance " +
        "sharing the database, in chunks of about this many frames (local backend; whole GOP " +
        "seconds, so the video is the same bytes)",
      defaultText: "each render renders whole on one worker",
    }))
    .addOption(
      shutdownTimeoutOption(
        "new requests get 503, requests in flight get all but the last " +
          `${DRAIN_RESERVE_SECONDS} s to finish, in-flight renders are re-queued`,
      ),
    )
    .option(
      "--min-free-space <size>",
      "free space the data folder needs for /readyz to say ready, e.g. 512M, 2G or 5% of " +
        "the disk; 0 turns the check off (default: 512M)",
      minFreeSpaceFlag,
    )
    .option(
      "--max-duration <seconds>",
      "longest render accepted, in seconds; longer is refused (422) before any charge",
      positiveInteger("--max-duration"),
      DEFAULT_MAX_DURATION_SECONDS,
    )
    .option(
      "--max-frames <n>",
      "most frames per render; more is refused (422) before any charge",
      positiveInteger("--max-frames"),
      DEFAULT_MAX_FRAMES,
    )
    .option(
      "--max-renders-per-account <n>",
      "renders of one account running at once (default: half the workers, at least 1)",
      positiveInteger("--max-renders-per-account"),
    )
    .option(
      "--max-queued-per-account <n>",
      "renders one account may have queued; more are refused (429 with Retry-After)",
      positiveInteger("--max-queued-per-account"),
      DEFAULT_MAX_QUEUED_PER_ACCOUNT,
    );
}

/**
 * `vid server`'s flags of what it serves and reaches: URLs, storage, metrics, proxies, the
 * render user.
 */
function withAccessOptions<
  Args extends unknown[],
  Opts extends OptionValues,
  Global extends OptionValues,
>(
  command: Command<Args, Opts, Global>,
) {
  return command
    .option("--public-url <url>", "base URL clients reach this server at (for signed links)")
    .option(
      "--storage <url>",
      "file:///path or s3://bucket?endpoint=…&path_style=1 (default: <data-dir>/storage)",
    )
    .option("--allow-http-callbacks", "accept http:// callback URLs to loopback (development)")
    .option(
      "--allow-private-urls",
      "let renders reach private/loopback hosts: url sources, pages, remote media, webhooks " +
        "(development)",
    )
    .option(
      "--metrics-token <token>",
      "bearer token GET /metrics requires, 16+ characters (default: /metrics is open; " +
        "env VID_METRICS_TOKEN)",
    )
    .option(
      "--trusted-proxy <cidr>",
      "a reverse proxy (address or CIDR range, repeatable) whose X-Forwarded-For names the " +
        "client: the rightmost hop that is not a trusted proxy is the address failed key " +
        "checks and sign-ins are throttled by (default: none; the header is ignored)",
      (value: string, previous: string[] = []) => [...previous, value],
    )
    .option(
      "--log-format <format>",
      "text (lines for a person) or json (one object per line: level, time, instance, msg, " +
        `requestId, renderId, accountId) (default: text; env ${LOG_FORMAT_ENV})`,
    )
    .option(
      "--render-user <name>",
      "account render browsers run as when the server runs as root (default: vid-render, " +
        "else nobody)",
    )
    .option(
      "--allow-no-sandbox",
      "start where Chromium's sandbox cannot (renders then run unsandboxed; not for " +
        "untrusted tenants)",
    );
}

/** `vid server`'s flags of the distributed render backend (`--render-backend lambda`). */
function withLambdaOptions<
  Args extends unknown[],
  Opts extends OptionValues,
  Global extends OptionValues,
>(
  command: Command<Args, Opts, Global>,
) {
  return command
    .option(
      "--render-backend <kind>",
      "local (render on this machine) or lambda (Step Functions + Lambda) (default: local; " +
        "env VID_RENDER_BACKEND)",
    )
    .option(
      "--lambda-bucket <name>",
      "lambda: the render bucket, RenderBucketName (env VID_LAMBDA_BUCKET)",
    )
    .option(
      "--lambda-state-machine <arn>",
      "lambda: the workflow, RenderStateMachineArn (env VID_LAMBDA_STATE_MACHINE_ARN)",
    )
    .option(
      "--lambda-region <region>",
      "lambda: AWS region (default: the state machine's; env AWS_REGION)",
    )
    .option(
      "--lambda-s3-endpoint <url>",
      "lambda: S3-compatible endpoint, path-style (env VID_S3_ENDPOINT)",
    )
    .option(
      "--lambda-sfn-endpoint <url>",
      "lambda: Step Functions-compatible endpoint (env VID_SFN_ENDPOINT)",
    )
    .option(
      "--lambda-chunk-size <frames>",
      "lambda: frames per chunk (default: 240; env VID_LAMBDA_CHUNK_SIZE)",
    )
    .option(
      "--lambda-max-parallel-chunks <n>",
      "lambda: chunk workers per render at most (default: 16; env " +
        "VID_LAMBDA_MAX_PARALLEL_CHUNKS)",
    )
    .option(
      "--lambda-max-in-flight <n>",
      `lambda: distributed renders at once (default: ${DEFAULT_LAMBDA_MAX_IN_FLIGHT}; ` +
        "env VID_LAMBDA_MAX_IN_FLIGHT)",
    )
    .option(
      "--lambda-poll-interval <ms>",
      `lambda: milliseconds between progress reads (default: ${DEFAULT_LAMBDA_POLL_INTERVAL_MS}; ` +
        "env VID_LAMBDA_POLL_INTERVAL_MS)",
    )
    .addHelpText(
      "after",
      "\nDistributed backend (--render-backend lambda): credentials come from the AWS\n" +
        "SDK's default chain (AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY, profile, role).\n" +
        "`vid lambda local` prints the VID_* variables of the local stack; with them set,\n" +
        "--render-backend lambda is the only flag needed. --workers applies to the local\n" +
        "backend only.",
    );
}

/** The environment variable `--log-format` falls back to. */
const LOG_FORMAT_ENV = "VID_LOG_FORMAT";

/** The environment variable `--role` falls back to. */
const ROLE_ENV = "VID_SERVER_ROLE";

/** Help of `--database`, on the server and its admin commands. */
const DATABASE_HELP = "PostgreSQL URL postgres://user:password@host:5432/db to keep state in " +
  "(default: SQLite in --data-dir; env VID_DATABASE_URL)";

/** `--database`, else `VID_DATABASE_URL`, else none (SQLite in the data folder). */
function databaseOf(options: { database?: string }): string | undefined {
  return options.database ?? (Deno.env.get(DATABASE_ENV) || undefined);
}

/** The flags of `vid server` itself. */
interface ServerFlags extends RenderBackendFlags {
  port: number;
  host: string;
  dataDir: string;
  database?: string;
  role?: string;
  workers: number;
  leaseSeconds: number;
  frameTimeout?: number;
  maxRenderSeconds?: number;
  chunkSize?: number;
  shutdownTimeout: number;
  minFreeSpace?: MinFreeSpace;
  publicUrl?: string;
  storage?: string;
  allowHttpCallbacks?: boolean;
  allowPrivateUrls?: boolean;
  metricsToken?: string;
  trustedProxy?: string[];
  logFormat?: string;
  renderUser?: string;
  allowNoSandbox?: boolean;
  maxDuration: number;
  maxFrames: number;
  maxRendersPerAccount?: number;
  maxQueuedPerAccount: number;
}

/** `vid server`: starts the API, announces it and serves until SIGINT or SIGTERM. */
async function runServer(options: ServerFlags): Promise<void> {
  const logFormat = options.logFormat ?? (Deno.env.get(LOG_FORMAT_ENV) || "text");
  if (!(LOG_FORMATS as readonly string[]).includes(logFormat)) {
    console.error(
      `error: --log-format (env ${LOG_FORMAT_ENV}) must be ${LOG_FORMATS.join(" or ")}, not ` +
        `"${logFormat}": json writes one JSON object per line`,
    );
    Deno.exitCode = EXIT.usage;
    return;
  }
  // From here on every line of the process, the server's and its libraries', is in it.
  configureLog({ format: logFormat as LogFormat });
  captureConsole();
  let renderBackend: RenderBackendConfig;
  try {
    renderBackend = resolveRenderBackend(options, (name) => Deno.env.get(name));
  } catch (error) {
    if (!(error instanceof RenderBackendConfigError)) throw error;
    console.error(`error: ${error.message}`);
    Deno.exitCode = EXIT.usage;
    return;
  }
  const role = options.role ?? (Deno.env.get(ROLE_ENV) || "all");
  if (!(SERVER_ROLES as readonly string[]).includes(role)) {
    console.error(
      `error: --role (env ${ROLE_ENV}) must be ${SERVER_ROLES.join(", ")}, not "${role}": ` +
        "api serves /v3, worker renders, all does both",
    );
    Deno.exitCode = EXIT.usage;
    return;
  }
  const metricsToken = options.metricsToken ?? (Deno.env.get("VID_METRICS_TOKEN") || undefined);
  if (metricsToken !== undefined && !METRICS_TOKEN.test(metricsToken)) {
    // The token itself is never printed: it may be a real one with a typo.
    console.error(
      `error: --metrics-token (env VID_METRICS_TOKEN) must be at least ${MIN_METRICS_TOKEN} ` +
        "characters without spaces; generate one with `openssl rand -hex 24`",
    );
    Deno.exitCode = EXIT.usage;
    return;
  }
  try {
    // Only here: the admin commands need the database, not the whole server (a third of
    // their start-up).
    const { startServer } = await import("../server/server.ts");
    const running = await startServer({
      metricsToken,
      renderBackend,
      port: options.port,
      hostname: options.host,
      dataDir: options.dataDir,
      database: databaseOf(options),
      workers: options.workers,
      role: role as ServerRole,
      leaseSeconds: options.leaseSeconds,
      publicUrl: options.publicUrl,
      storage: options.storage,
      allowHttpCallbacks: options.allowHttpCallbacks,
      allowPrivateUrls: options.allowPrivateUrls,
      frameTimeoutMs: options.frameTimeout,
      maxRenderSeconds: options.maxRenderSeconds,
      chunkSize: options.chunkSize,
      renderUser: options.renderUser,
      trustedProxies: options.trustedProxy,
      allowNoSandbox: options.allowNoSandbox,
      minFreeSpace: options.minFreeSpace,
      drainSeconds: drainSecondsOf(options.shutdownTimeout),
      limits: {
        maxDurationSeconds: options.maxDuration,
        maxFrames: options.maxFrames,
        maxRendersPerAccount: options.maxRendersPerAccount,
        maxQueuedPerAccount: options.maxQueuedPerAccount,
      },
    });
    // Caught before "listening" is printed: whoever reads that line may signal at once.
    const signals = listenForStop();
    announce(running, renderBackend, options.dataDir, databaseOf(options));
    await runUntilStopped({
      signals,
      name: "vid server",
      timeoutSeconds: options.shutdownTimeout,
      stopping: "stopping: new requests get 503, requests in flight get " +
        `${drainSecondsOf(options.shutdownTimeout)} s to finish, in-flight renders go back ` +
        "to the queue",
      close: () => running.close(),
      kill: async () => {
        const killed = await running.kill();
        return `killed ${killed.browsers} render browser(s) and ${killed.encoders} ffmpeg ` +
          "process(es); in-flight renders go back to the queue";
      },
    });
  } catch (error) {
    Deno.exitCode = reportError(error);
  }
}

/** What a started server prints: where it listens, its backend, what it cleaned up. */
function announce(
  running: Awaited<ReturnType<typeof startServer>>,
  renderBackend: RenderBackendConfig,
  dataDir: string,
  database: string | undefined,
): void {
  const state = database === undefined ? "" : `, database: ${redactUrl(database)}`;
  log.info(`vid server listening on ${running.url} (data: ${dataDir}${state})`, {
    url: running.url,
  });
  if (running.role === "api") log.info("role: api (serves /v3 and enqueues; renders nothing)");
  if (running.role === "worker") {
    log.info("role: worker (renders; serves only /healthz, /readyz and /metrics)");
  }
  if (renderBackend.kind === "lambda" && running.role !== "api") {
    log.info(
      `render backend: lambda (bucket ${renderBackend.bucketName}, state machine ` +
        `${renderBackend.stateMachineArn}, up to ${renderBackend.maxInFlight} renders in flight)`,
    );
  }
  if (running.reaped.browsers > 0 || running.reaped.folders > 0) {
    log.info(
      `cleaned up after a run that did not stop: killed ${running.reaped.browsers} ` +
        `browser(s), removed ${running.reaped.folders} work folder(s)`,
    );
  }
  if (running.requeued > 0) {
    log.info(`re-queued ${running.requeued} render(s) interrupted by the last stop`);
  }
}

/** `vid server users add`: a local account. */
function registerUsers(server: Command): void {
  server
    .command("users")
    .description("Manage local accounts")
    .command("add")
    .description(
      "Add an account. The password is read from standard input unless --password is given.",
    )
    .argument("<email>", "the account's email")
    .option(
      "--password <password>",
      "password (visible to other users of this machine: prefer stdin)",
    )
    .option("--credits <n>", "starting credit balance", integerIn("--credits", 0, 1e12), 1000)
    .option("--data-dir <dir>", "the server's data folder", DEFAULT_DATA_DIR)
    .option("--database <url>", DATABASE_HELP)
    .option("--json", "print machine-readable JSON")
    .action(async (email, options) => {
      try {
        const password = options.password ?? await readStdin();
        const db = await openDataDir(options.dataDir, databaseOf(options));
        try {
          const account = await addUser(db, email, password, options.credits);
          if (options.json) console.log(JSON.stringify({ ok: true, ...account }, null, 2));
          else console.log(`added ${account.email} (${account.id}), ${account.credits} credits`);
        } finally {
          await db.close();
        }
      } catch (error) {
        Deno.exitCode = reportError(error, options.json);
      }
    });
}

/** `vid server keys create|list|revoke`: API keys of the local accounts. */
function registerKeys(server: Command): void {
  const keys = server
    .command("keys")
    .description("Manage API keys: create, list, revoke");
  keys
    .command("create")
    .description("Create an API key for an account; the key is printed once")
    .argument("<email>", "the account's email")
    .option("--name <name>", "a label for the key", "default")
    .option("--data-dir <dir>", "the server's data folder", DEFAULT_DATA_DIR)
    .option("--database <url>", DATABASE_HELP)
    .option("--json", "print machine-readable JSON")
    .action(async (email, options) => {
      try {
        const db = await openDataDir(options.dataDir, databaseOf(options));
        try {
          const { id, key } = await createApiKey(db, email, options.name);
          if (options.json) console.log(JSON.stringify({ ok: true, id, key }, null, 2));
          else console.log(key);
        } finally {
          await db.close();
        }
      } catch (error) {
        Deno.exitCode = reportError(error, options.json);
      }
    });

  keys
    .command("list")
    .description("List API keys (id, account, name, dates); keys themselves are never shown")
    .argument("[email]", "only this account's keys")
    .option("--data-dir <dir>", "the server's data folder", DEFAULT_DATA_DIR)
    .option("--database <url>", DATABASE_HELP)
    .option("--json", "print machine-readable JSON")
    .action(async (email, options) => {
      try {
        const db = await openDataDir(options.dataDir, databaseOf(options));
        try {
          const list = await listApiKeys(db, email);
          if (options.json) console.log(JSON.stringify({ ok: true, keys: list }, null, 2));
          else if (list.length === 0) console.log("no API keys");
          else console.log(keyTable(list));
        } finally {
          await db.close();
        }
      } catch (error) {
        Deno.exitCode = reportError(error, options.json);
      }
    });

  keys
    .command("revoke")
    .description(
      "Revoke an API key by its id (key_…, see keys list); requests with it get 401 at once",
    )
    .argument("<id>", "the key's id, e.g. key_1a2b3c4d5e6f")
    .option("--data-dir <dir>", "the server's data folder", DEFAULT_DATA_DIR)
    .option("--database <url>", DATABASE_HELP)
    .option("--json", "print machine-readable JSON")
    .action(async (id, options) => {
      try {
        const db = await openDataDir(options.dataDir, databaseOf(options));
        try {
          const key = await revokeApiKey(db, id);
          if (options.json) console.log(JSON.stringify({ ok: true, ...key }, null, 2));
          else console.log(`revoked ${key.id} (${key.name}) of ${key.email} at ${key.revoked_at}`);
        } finally {
          await db.close();
        }
      } catch (error) {
        Deno.exitCode = reportError(error, options.json);
      }
    });
}

/** The keys as an aligned text table. */
function keyTable(list: ApiKeyInfo[]): string {
  const rows = [
    ["ID", "ACCOUNT", "NAME", "CREATED", "REVOKED"],
    ...list.map((k) => [k.id, k.email, k.name, k.created_at, k.revoked_at ?? "-"]),
  ];
  const widths = rows[0].map((_, i) => Math.max(...rows.map((r) => r[i].length)));
  return rows.map((r) => r.map((cell, i) => cell.padEnd(widths[i])).join("  ").trimEnd())
    .join("\n");
}
