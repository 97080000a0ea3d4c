/**
 * Test helper: a real PostgreSQL from the OS package (`apt-get install postgresql`, which
 * `deno task setup` installs) on a free loopback port, in a fresh temporary folder, with a
 * password, so tests of `vid server --database postgres://…` talk to the same server an
 * operator runs. `initdb` and the server run as the `postgres` user when the tests run as
 * root (PostgreSQL refuses root), through `setpriv`.
 *
 * The server is this process's child, run in the foreground, rather than daemonized by
 * `pg_ctl start`: `setpriv --pdeathsig` has the kernel send it SIGINT (PostgreSQL's fast
 * shutdown) when the test process ends, however it ends (a failed assertion, Ctrl-C,
 * SIGKILL), so no run leaves a server behind; a daemon would outlive a killed test. `stop()`
 * sends the same SIGINT that `pg_ctl stop -m fast` sends and waits for the exit, with a
 * deadline after which the server is killed. `restart()` stops and starts it again on the
 * same data folder and port, for tests of a database that goes away mid-render.
 *
 * @module
 */

import { readdir, readlink } from "node:fs/promises";
import { join } from "node:path";
import { findPostgres } from "../src/render/system.ts";

/** How long initdb, a start or a stop may take before the helper gives up (host-enforced). */
const DEADLINE_MS = 60_000;
/** Most of the server's log kept for error messages. */
const LOG_LIMIT = 64 * 1024;

/** A running (or stopped, then restartable) PostgreSQL. */
export interface PostgresServer extends AsyncDisposable {
  /** `postgres://postgres:<password>@127.0.0.1:<port>/vid`: the `vid` database. */
  url: string;
  /** The loopback port it listens on; the same after a restart. */
  port: number;
  /** The superuser's password (also in `url`). */
  password: string;
  /** The data folder (`initdb -D`). */
  dataDir: string;
  /** PostgreSQL's major version, e.g. `15`. */
  version: string;
  /** The server's process id while it runs. */
  pid(): number | undefined;
  /** The server's log so far (its last 64 KiB). */
  log(): string;
  /** Fast shutdown: clients are disconnected, the server exits. A no-op when stopped. */
  stop(): Promise<void>;
  /** Starts it again on the same data folder and port. */
  start(): Promise<void>;
  /** `stop()` then `start()`. */
  restart(): Promise<void>;
  /** Stops it and removes its folder. */
  close(): Promise<void>;
}

/** Options of {@linkcode startPostgres}. */
export interface PostgresOptions {
  /** Database created for the tests. @default "vid" */
  database?: string;
}

/** uid and gid of the `postgres` user, from /etc/passwd. */
async function postgresUser(): Promise<{ uid: number; gid: number }> {
  const line = (await Deno.readTextFile("/etc/passwd")).split("\n")
    .find((l) => l.startsWith("postgres:"));
  if (!line) {
    throw new Error("no postgres user: install the postgresql package (deno task setup as root)");
  }
  const [, , uid, gid] = line.split(":");
  return { uid: Number(uid), gid: Number(gid) };
}

/** A loopback port nothing listens on right now. */
function freePort(): number {
  const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const port = (listener.addr as Deno.NetAddr).port;
  listener.close();
  return port;
}

/** The process ids whose working folder is `dir` (PostgreSQL's processes run in their data folder). */
export async function processesIn(dir: string): Promise<number[]> {
  const pids: number[] = [];
  for (const entry of await readdir("/proc")) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      if (await readlink(`/proc/${entry}/cwd`) === dir) pids.push(Number(entry));
    } catch {
      // gone, or not ours to read
    }
  }
  return pids;
}

/** Runs a command to its end within {@linkcode DEADLINE_MS}; throws with its output on failure. */
async function run(program: string, args: string[], env: Record<string, string> = {}) {
  const child = new Deno.Command(program, {
    args,
    env,
    stdin: "null",
    stdout: "piped",
    stderr: "piped",
  }).spawn();
  const timer = setTimeout(() => {
    try {
      child.kill("SIGKILL");
    } catch {
      // already gone
    }
  }, DEADLINE_MS);
  try {
    const { code, stdout, stderr } = await child.output();
    const text = new TextDecoder().decode(stdout) + new TextDecoder().decode(stderr);
    if (code !== 0) throw new Error(`${program} ${args.join(" ")} failed (${code}): ${text}`);
    return text;
  } finally {
    clearTimeout(timer);
  }
}

/**
 * Creates a cluster in a temporary folder, starts PostgreSQL on a free loopback port and
 * creates the `vid` database. Stop it with `close()` (or `await using`).
 *
 * @example
 * ```ts no_run
 * import postgresClient from "postgres";
 *
 * await using postgres = await startPostgres();
 * const sql = postgresClient(postgres.url);
 * console.log(await sql`select 1 as one`);
 * await sql.end();
 * ```
 */
export async function startPostgres(options: PostgresOptions = {}): Promise<PostgresServer> {
  const found = await findPostgres();
  if (!found) {
    throw new Error(
      "PostgreSQL is not installed: run `deno task setup` as root, or " +
        "`sudo apt-get install -y postgresql` (or set VID_POSTGRES_BIN)",
    );
  }
  const { bin, version } = found;
  const database = options.database ?? "vid";
  const asRoot = Deno.uid() === 0;
  const user = asRoot ? await postgresUser() : undefined;
  /** Runs a PostgreSQL program as the postgres user when root, with `extra` setpriv flags. */
  const as = (program: string, args: string[], extra: string[] = []): string[] => [
    ...(user ? [`--reuid=${user.uid}`, `--regid=${user.gid}`, "--init-groups"] : []),
    ...extra,
    "--",
    `${bin}/${program}`,
    ...args,
  ];

  const root = await Deno.makeTempDir({ prefix: "vid-postgres-" });
  if (user) await Deno.chown(root, user.uid, user.gid);
  const dataDir = join(root, "data");
  const password = crypto.randomUUID().replaceAll("-", "");
  const pwfile = join(root, "pwfile");
  await Deno.writeTextFile(pwfile, password + "\n", { mode: 0o600 });
  if (user) await Deno.chown(pwfile, user.uid, user.gid);
  try {
    await run(
      "setpriv",
      as("initdb", [
        "-D",
        dataDir,
        "-U",
        "postgres",
        `--pwfile=${pwfile}`,
        "--auth-local=trust",
        "--auth-host=scram-sha-256",
        "--encoding=UTF8",
        "--locale=C",
        "--no-sync",
        "--no-instructions",
      ]),
    );
  } catch (error) {
    await Deno.remove(root, { recursive: true });
    throw error;
  } finally {
    await Deno.remove(pwfile).catch(() => {});
  }

  let port = freePort();
  let child: Deno.ChildProcess | undefined;
  let exited: Promise<Deno.CommandStatus> | undefined;
  let log = "";

  const spawn = async (): Promise<void> => {
    // The log of this start only: an earlier start's "ready" line must not count.
    let thisRun = "";
    const postgres = new Deno.Command("setpriv", {
      args: as("postgres", [
        "-D",
        dataDir,
        "-p",
        String(port),
        "-k",
        root,
        "-c",
        "listen_addresses=127.0.0.1",
        // A test cluster: nothing here needs to survive a power cut.
        "-c",
        "fsync=off",
        "-c",
        "full_page_writes=off",
      ], ["--pdeathsig=INT"]),
      stdin: "null",
      stdout: "piped",
      stderr: "piped",
    }).spawn();
    child = postgres;
    exited = postgres.status;
    for (const stream of [postgres.stdout, postgres.stderr]) {
      stream.pipeThrough(new TextDecoderStream()).pipeTo(
        new WritableStream({
          write: (text) => {
            log = (log + text).slice(-LOG_LIMIT);
            thisRun = (thisRun + text).slice(-LOG_LIMIT);
          },
        }),
      ).catch(() => {});
    }
    const deadline = Date.now() + DEADLINE_MS;
    let ended: Deno.CommandStatus | undefined;
    void exited.then((status) => ended = status);
    while (true) {
      if (ended) {
        child = undefined;
        throw new Error(`postgres exited (${ended.code}) before it was ready:\n${log}`);
      }
      if (/database system is ready to accept connections/.test(thisRun)) return;
      if (Date.now() > deadline) {
        postgres.kill("SIGKILL");
        await exited;
        child = undefined;
        throw new Error(`postgres was not ready within ${DEADLINE_MS} ms:\n${log}`);
      }
      await new Promise((r) => setTimeout(r, 50));
    }
  };

  const stop = async (): Promise<void> => {
    const running = child;
    if (!running) return;
    child = undefined;
    try {
      running.kill("SIGINT");
    } catch {
      // already gone
    }
    let timer: ReturnType<typeof setTimeout> | undefined;
    const late = new Promise<"late">((resolve) =>
      timer = setTimeout(() => resolve("late"), DEADLINE_MS)
    );
    if (await Promise.race([exited!, late]) === "late") {
      running.kill("SIGKILL");
      await exited;
    }
    clearTimeout(timer);
    // Backends leave when the postmaster does; wait until none is left in the folder.
    const deadline = Date.now() + DEADLINE_MS;
    while ((await processesIn(dataDir)).length > 0) {
      if (Date.now() > deadline) throw new Error(`postgres processes outlived the stop:\n${log}`);
      await new Promise((r) => setTimeout(r, 50));
    }
  };

  const startWithRetries = async (firstStart: boolean): Promise<void> => {
    for (let attempt = 1;; attempt++) {
      try {
        return await spawn();
      } catch (error) {
        // Another process took the free port between the probe and the bind.
        const taken = /could not bind|Address already in use/.test(String(error));
        if (!firstStart || !taken || attempt >= 3) throw error;
        port = freePort();
      }
    }
  };

  try {
    await startWithRetries(true);
    await run(`${bin}/createdb`, [
      "-h",
      "127.0.0.1",
      "-p",
      String(port),
      "-U",
      "postgres",
      database,
    ], {
      PGPASSWORD: password,
    });
  } catch (error) {
    await stop().catch(() => {});
    await Deno.remove(root, { recursive: true }).catch(() => {});
    throw error;
  }

  const server: PostgresServer = {
    url: `postgres://postgres:${password}@127.0.0.1:${port}/${database}`,
    port,
    password,
    dataDir,
    version,
    pid: () => child?.pid,
    log: () => log,
    stop,
    start: () => startWithRetries(false),
    async restart(): Promise<void> {
      await stop();
      await startWithRetries(false);
    },
    async close(): Promise<void> {
      try {
        await stop();
      } finally {
        await Deno.remove(root, { recursive: true }).catch(() => {});
      }
    },
    [Symbol.asyncDispose](): Promise<void> {
      return server.close();
    },
  };
  return server;
}
