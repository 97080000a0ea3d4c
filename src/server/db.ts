/**
 * The server's state: accounts, API keys, tokens, assets, renders, idempotency keys and
 * webhook deliveries. Everything a restart needs is in the database, so a server killed
 * mid-render re-queues the work and loses nothing. The engines and the schema live in
 * `database/`; this module names what server code imports from there.
 *
 * @module
 */

export {
  type Database,
  DatabaseUnavailableError,
  now,
  type Queries,
  type Row,
  type SqlValue,
} from "./database/mod.ts";
export { openDatabase } from "./database/mod.ts";
