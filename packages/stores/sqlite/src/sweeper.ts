/**
 * Incremental deletion of expired rows, run inside a decision's write transaction every `every` writes.
 *
 * Each sweep examines the next `batch` rows in primary-key order, starting after where the previous sweep of this
 * connection stopped, and deletes the expired ones; at the end of the table it starts over. The work per sweep is
 * bounded by `batch` rows whatever the table's size, and no index on expires_at is kept: such an index would have
 * to be rewritten on every decision (the expiry moves with each write), which measured about a quarter more CPU
 * per decision than the sweep costs. With the defaults (256 rows every 128 writes) each write pays for examining
 * two rows, so a pass over a table of R rows completes within R / 2 writes, and an expired row outlives its
 * expiry by at most one pass.
 */
import type { SqliteDatabase, SqliteStatement } from './database.js';

export class Sweeper {
  private readonly boundary: SqliteStatement;
  private readonly deleteRange: SqliteStatement;
  private readonly deleteTail: SqliteStatement;
  private readonly batch: number;
  /** Primary key of the last row examined; ('', '') sorts before every real key. */
  private afterKey = '';
  private afterRule = '';

  constructor(db: SqliteDatabase, table: string, batch: number) {
    this.batch = batch;
    const t = `"${table}"`;
    this.boundary = db
      .prepare(`SELECT key, rule FROM ${t} WHERE (key, rule) > (?, ?) ORDER BY key, rule LIMIT 1 OFFSET ?`)
      .safeIntegers(false)
      .raw(true);
    this.deleteRange = db.prepare(`DELETE FROM ${t} WHERE (key, rule) > (?, ?) AND (key, rule) <= (?, ?) AND expires_at <= ?`);
    this.deleteTail = db.prepare(`DELETE FROM ${t} WHERE (key, rule) > (?, ?) AND expires_at <= ?`);
  }

  /** Examines at most `batch` rows after the cursor and deletes those expired at `now`; returns how many went. */
  sweep(now: number): number {
    const last = this.boundary.get(this.afterKey, this.afterRule, this.batch - 1) as [string, string] | undefined;
    if (last === undefined) {
      // Fewer than `batch` rows remain: finish the pass and start the next one from the beginning.
      const deleted = this.deleteTail.run(this.afterKey, this.afterRule, now).changes;
      this.afterKey = '';
      this.afterRule = '';
      return deleted;
    }
    const deleted = this.deleteRange.run(this.afterKey, this.afterRule, last[0], last[1], now).changes;
    this.afterKey = last[0];
    this.afterRule = last[1];
    return deleted;
  }
}
