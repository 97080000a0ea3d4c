/**
 * What a database is to its users and its engines: the statements ({@linkcode Queries}), the
 * open database ({@linkcode Database}) and the values they carry. Its own module, importing
 * nothing, so the engines (`sqlite.ts`, `postgres.ts`) and the schema can name the shape that
 * `mod.ts` opens them behind without importing `mod.ts` back.
 *
 * @module
 */

/** A value a query takes or a row holds. */
export type SqlValue = string | number | null;

/** A row as a query returns it, by column name. */
export type Row = Record<string, SqlValue>;

/** The statements a database, or a transaction on it, runs. */
export interface Queries {
  /** The first row `sql` selects, or `undefined`. */
  get<T = Row>(sql: string, ...params: SqlValue[]): Promise<T | undefined>;
  /** Every row `sql` selects. */
  all<T = Row>(sql: string, ...params: SqlValue[]): Promise<T[]>;
  /** Runs an insert, update or delete; resolves to how many rows it changed. */
  run(sql: string, ...params: SqlValue[]): Promise<number>;
}

/** An open database: statements, transactions, and closing. */
export interface Database extends Queries {
  /**
   * Runs `fn` in one transaction, committed when it resolves and rolled back when it throws.
   * Statements in it go through `tx`; the database's own methods wait until it ends, so a
   * transaction that calls them instead of `tx` would wait on itself, and `tx` refuses work
   * once the transaction is over.
   */
  transaction<T>(fn: (tx: Queries) => Promise<T>): Promise<T>;
  /**
   * Milliseconds the oldest statement waiting now has waited for another process's lock on
   * the database (SQLite's write lock); 0 when none waits. `/readyz` is not ready past a
   * bound. Engines that wait on the network instead (PostgreSQL) leave it out.
   */
  lockedForMs?(): number;
  /** Closes the connection(s); statements after it fail. */
  close(): Promise<void>;
}
