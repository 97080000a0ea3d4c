/**
 * The server's data folder: where a server without `--database` keeps its SQLite file
 * (`vid.db`), private to the server's user. Everything a restart needs is in the database,
 * so a server killed mid-render re-queues the work and loses nothing. Server code reaches
 * the database itself through `mod.ts`.
 *
 * @module
 */

import { chmod, mkdir, stat } from "node:fs/promises";
import { join } from "node:path";
import { type Database, openDatabase } from "./mod.ts";

/**
 * Opens the server's database: PostgreSQL at `database` when given, else the SQLite file in
 * the data folder. The server and its admin commands open it so; the commands import it
 * from here, without the whole server.
 */
export async function openDataDir(dataDir: string, database?: string): Promise<Database> {
  if (database !== undefined) return await openDatabase(database);
  await mkdir(dataDir, { recursive: true, mode: 0o700 });
  // A folder made by hand (or by an older vid) may be 0755: the data folder holds every
  // tenant's projects and videos, so it is private whoever created it. A server run as root
  // lets its render user's group pass through (0710, `openPathToProcessUser`): an admin
  // command run meanwhile keeps that, or the renders would fail.
  const mode = (await stat(dataDir)).mode & 0o777;
  await chmod(dataDir, mode === 0o710 ? 0o710 : 0o700);
  return openDatabase(join(dataDir, "vid.db"));
}
