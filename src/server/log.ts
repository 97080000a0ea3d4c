/**
 * The log of `vid server`: every line the server writes goes through here. Two formats
 * (`vid server --log-format`): `text`, the plain lines a person reads at a terminal (the
 * default), and `json`, one JSON object per line for a log pipeline, with `level`, `time`
 * (ISO 8601), `instance` (this run's name on the leases it holds, see `leases.ts`), `msg` and,
 * where known, `requestId`, `renderId` and `accountId`.
 *
 * Lines written while an HTTP request is served carry that request's fields without being
 * passed them: {@linkcode withLogContext} runs the request in an async context whose fields
 * every line adds ({@linkcode addLogContext} adds the account once it is known). `info` goes to
 * stdout, `warn` and `error` to stderr, in either format. Known secret shapes (API keys and
 * OAuth tokens, `Bearer` credentials, signed-URL signatures, passwords in URLs) are masked in
 * every line, whatever the caller passed.
 *
 * @module
 */

import { AsyncLocalStorage } from "node:async_hooks";
import { hostname } from "node:os";

/** How lines are written: plain text, or one JSON object per line. */
export type LogFormat = "text" | "json";

/** The formats `--log-format` takes, in the order the help lists them. */
export const LOG_FORMATS: readonly LogFormat[] = ["text", "json"];

/** How bad a line is: `info` goes to stdout, the others to stderr. */
export type LogLevel = "info" | "warn" | "error";

/** What a line is about, besides its message; only the JSON format writes them. */
export interface LogFields {
  /** The HTTP request being served (its `X-Request-Id`). */
  requestId?: string;
  /** The render the line is about. */
  renderId?: string;
  /** The account the request or render belongs to. */
  accountId?: string;
  /** Anything else worth a field (`attempt`, `status`, `deliveryId`…). */
  [name: string]: string | number | boolean | null | undefined;
}

/** Settings of the process's log (see {@linkcode configureLog}). */
export interface LogSettings {
  /** Line format. @default "text" */
  format?: LogFormat;
  /** The `instance` field of JSON lines. @default `<hostname>:<pid>` */
  instance?: string;
}

let format: LogFormat = "text";
let instance = `${hostname()}:${Deno.pid}`;
const context = new AsyncLocalStorage<LogFields>();
const encoder = new TextEncoder();
/** The console as it was before {@linkcode captureConsole}, which text lines still reach. */
const original = {
  log: console.log,
  info: console.info,
  debug: console.debug,
  warn: console.warn,
  error: console.error,
};

/**
 * Sets the format and the `instance` name of the lines written from now on; fields not given
 * keep their value.
 *
 * @example
 * ```ts
 * configureLog({ format: "json", instance: "box-1:42:w_0123456789ab" });
 * log.info("hello", { renderId: "rnd_1" });
 * // {"level":"info","time":"…","instance":"box-1:42:w_0123456789ab","msg":"hello","renderId":"rnd_1"}
 * configureLog({ format: "text" });
 * ```
 */
export function configureLog(settings: LogSettings): void {
  if (settings.format !== undefined) format = settings.format;
  if (settings.instance !== undefined) instance = settings.instance;
}

/** The format lines are written in now. */
export function logFormat(): LogFormat {
  return format;
}

/**
 * Runs `run` with `fields` added to every line written inside it, including lines of work
 * it starts and awaits (an HTTP request's handlers, say).
 */
export function withLogContext<T>(fields: LogFields, run: () => T): T {
  return context.run({ ...context.getStore(), ...fields }, run);
}

/**
 * Adds `fields` to the current context of {@linkcode withLogContext} (the account once the
 * request is authenticated): the rest of its lines carry them. Outside one, does nothing.
 */
export function addLogContext(fields: LogFields): void {
  const store = context.getStore();
  if (store !== undefined) Object.assign(store, fields);
}

/** The fields of the current context of {@linkcode withLogContext}. */
export function logContext(): Readonly<LogFields> {
  return { ...context.getStore() };
}

/** Secret shapes masked in every line: what they match is replaced by `$1***`. */
const SECRETS: readonly RegExp[] = [
  // API keys, OAuth access and refresh tokens, authorization codes (see accounts.ts).
  /\b(vid_(?:sk|at|rt|ac)_)[0-9a-f]+/g,
  /\b(Bearer\s+)[^\s"',;]+/gi,
  // A signed URL's signature.
  /\b(sig=)[^\s&"']+/g,
  // The password of a URL (`postgres://user:password@host`).
  /(\b[a-z][a-z0-9+.-]*:\/\/[^\s:/@]+:)[^\s@/]+(?=@)/gi,
];

/**
 * `text` with the secret shapes the server knows masked.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 *
 * assert.equal(scrubSecrets("key vid_sk_0a1b"), "key vid_sk_***");
 * assert.equal(scrubSecrets("postgres://vid:hunter2@db/vid"), "postgres://vid:***@db/vid");
 * ```
 */
export function scrubSecrets(text: string): string {
  return SECRETS.reduce((out, pattern) => out.replace(pattern, "$1***"), text);
}

/** Writes all of `text` to `file`, synchronously, so lines of one process never interleave. */
function writeAll(file: { writeSync(p: Uint8Array): number }, text: string): void {
  let bytes = encoder.encode(text);
  while (bytes.length > 0) bytes = bytes.subarray(file.writeSync(bytes));
}

/**
 * The JSON line of `msg` at `level` with `fields` over the context's, as
 * {@linkcode logLine} writes it in the `json` format.
 */
export function jsonLine(level: LogLevel, msg: string, fields: LogFields = {}): string {
  const line: Record<string, unknown> = {
    level,
    time: new Date().toISOString(),
    instance,
    msg: scrubSecrets(msg),
  };
  for (const [name, value] of Object.entries({ ...context.getStore(), ...fields })) {
    if (value === undefined || name in line) continue;
    line[name] = typeof value === "string" ? scrubSecrets(value) : value;
  }
  return JSON.stringify(line);
}

/**
 * Writes one line: in the `text` format `msg` alone (stdout for `info`, stderr otherwise); in
 * the `json` format one JSON object with the fields.
 */
export function logLine(level: LogLevel, msg: string, fields?: LogFields): void {
  if (format === "json") {
    const file = level === "info" ? Deno.stdout : Deno.stderr;
    writeAll(file, jsonLine(level, msg, fields) + "\n");
    return;
  }
  // Through the console of the moment (tests replace it); captured, it writes the original.
  const write = level === "info" ? console.log : level === "warn" ? console.warn : console.error;
  write(scrubSecrets(msg));
}

/**
 * The server's log: one call per line, with the fields it is about.
 *
 * @example
 * ```ts
 * log.info("render rnd_1: taken over", { renderId: "rnd_1", accountId: "acct_1" });
 * ```
 */
export const log: {
  info(msg: string, fields?: LogFields): void;
  warn(msg: string, fields?: LogFields): void;
  error(msg: string, fields?: LogFields): void;
} = {
  info: (msg, fields) => logLine("info", msg, fields),
  warn: (msg, fields) => logLine("warn", msg, fields),
  error: (msg, fields) => logLine("error", msg, fields),
};

/** What a console call would print for `args`: strings as they are, the rest inspected. */
function consoleText(args: unknown[]): string {
  return args.map((arg) => typeof arg === "string" ? arg : Deno.inspect(arg)).join(" ");
}

/**
 * Sends what code the server runs writes through `console` (the renderer, the SDKs, the
 * command line's own messages) to the log too, so that in the `json` format every line of the
 * process is one JSON object. `console.log`, `info` and `debug` are `info`; `warn` is `warn`;
 * `error` is `error`.
 *
 * @returns Puts the console back.
 */
export function captureConsole(): () => void {
  const to = (level: LogLevel, text: (...args: unknown[]) => void) => (...args: unknown[]) =>
    format === "json" ? logLine(level, consoleText(args)) : text(...args);
  console.log = to("info", original.log);
  console.info = to("info", original.info);
  console.debug = to("info", original.debug);
  console.warn = to("warn", original.warn);
  console.error = to("error", original.error);
  return () => Object.assign(console, original);
}
