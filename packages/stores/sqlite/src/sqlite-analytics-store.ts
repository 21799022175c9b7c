import { SluiceError } from '@sluice/core';
import { ANALYTICS_OUTCOMES, analyticsStoreSettings, type AnalyticsSecond, type AnalyticsStore } from '@sluice/core/analytics';
import { describeValue, nameOption } from '@sluice/core/internal';
import type { SqliteDatabase, SqliteStatement } from './database.js';
import { sqliteCode } from './store-error.js';

export interface SqliteAnalyticsStoreOptions {
  /** Seconds older than this are deleted on publish and never read. @default '15m' */
  retention?: number | string;
  /** Limited identities `read` returns per second, summed over instances. @default 20 */
  topK?: number;
  /** Epoch milliseconds, for the retention. Inject a fake clock in tests. @default Date.now */
  now?: () => number;
}

interface Statements {
  addCounts: SqliteStatement;
  addTop: SqliteStatement;
  pruneCounts: SqliteStatement;
  pruneTop: SqliteStatement;
  readCounts: SqliteStatement;
  readTop: SqliteStatement;
  names: SqliteStatement;
  publish: (name: string, seconds: readonly AnalyticsSecond[], cutoff: number) => void;
}

interface CountsRow {
  second: number;
  allowed: number;
  limited: number;
  shadow_limited: number;
  shed: number;
  degraded: number;
}

const WHERE = 'sqliteAnalyticsStore';
/** The columns of `sluice_analytics`, in ANALYTICS_OUTCOMES order. */
const COLUMNS = ['allowed', 'limited', 'shadow_limited', 'shed', 'degraded'] as const;

/**
 * Fleet analytics (core's `createFleetAnalytics`) in the SQLite file the processes share. Two tables, created on first
 * use: `sluice_analytics` (name, second, one column per outcome) and `sluice_analytics_top` (name, second,
 * identity, limited). A publish is one transaction of upserts that add to what is there, and deletes the name's
 * seconds older than `retention`; a read is two range scans of the primary keys.
 * @example createFleetAnalytics({ store: sqliteAnalyticsStore(new Database('ratelimit.db')) })
 */
export function sqliteAnalyticsStore(db: SqliteDatabase, options: SqliteAnalyticsStoreOptions = {}): AnalyticsStore {
  if (typeof db !== 'object' || db === null || typeof (db as Partial<SqliteDatabase>).prepare !== 'function') {
    throw new SluiceError(
      'INVALID_OPTION',
      `${WHERE}: db must be a better-sqlite3 Database, e.g. sqliteAnalyticsStore(new Database('ratelimit.db')), got ${describeValue(db)}`,
    );
  }
  const { retentionSeconds, topK, now } = analyticsStoreSettings(options, WHERE);
  const oldest = () => Math.floor(now() / 1000) - retentionSeconds;
  let statements: Statements | undefined;
  const prepared = (): Statements => (statements ??= prepare(db));

  return {
    publish(name, seconds) {
      nameOption(name, `${WHERE}: name`);
      const cutoff = oldest();
      try {
        prepared().publish(name, seconds, cutoff);
      } catch (error) {
        throw failure(`publishing the analytics of ${JSON.stringify(name)}`, error);
      }
    },
    read(name, from, to) {
      nameOption(name, `${WHERE}: name`);
      const low = Math.max(Math.ceil(from), oldest());
      const high = Math.floor(to);
      if (!(low <= high)) return [];
      let rows: CountsRow[];
      let tops: { second: number; identity: string; limited: number }[];
      try {
        const s = prepared();
        rows = s.readCounts.all(name, low, high) as CountsRow[];
        tops = s.readTop.all(name, low, high) as typeof tops;
      } catch (error) {
        throw failure(`reading the analytics of ${JSON.stringify(name)}`, error);
      }
      const bySecond = new Map<number, [string, number][]>();
      for (const { second, identity, limited } of tops) {
        let list = bySecond.get(second);
        if (list === undefined) bySecond.set(second, (list = []));
        if (list.length < topK) list.push([identity, limited]);
      }
      return rows.map((row) => ({
        second: row.second,
        counts: {
          allowed: row.allowed,
          limited: row.limited,
          shadowLimited: row.shadow_limited,
          shed: row.shed,
          degraded: row.degraded,
        },
        topLimited: bySecond.get(row.second) ?? [],
      }));
    },
    names() {
      try {
        return (prepared().names.all(oldest()) as { name: string }[]).map((row) => row.name);
      } catch (error) {
        throw failure('listing the limiter names', error);
      }
    },
  };
}

function prepare(db: SqliteDatabase): Statements {
  try {
    db.exec(
      `CREATE TABLE IF NOT EXISTS sluice_analytics (name TEXT NOT NULL, second INTEGER NOT NULL, ${COLUMNS.map((c) => `${c} INTEGER NOT NULL DEFAULT 0`).join(', ')}, PRIMARY KEY (name, second)) WITHOUT ROWID;
       CREATE TABLE IF NOT EXISTS sluice_analytics_top (name TEXT NOT NULL, second INTEGER NOT NULL, identity TEXT NOT NULL, limited INTEGER NOT NULL, PRIMARY KEY (name, second, identity)) WITHOUT ROWID;`,
    );
  } catch (error) {
    throw failure('creating the tables sluice_analytics and sluice_analytics_top', error);
  }
  const addCounts = db.prepare(
    `INSERT INTO sluice_analytics (name, second, ${COLUMNS.join(', ')}) VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT (name, second) DO UPDATE SET ${COLUMNS.map((c) => `${c} = ${c} + excluded.${c}`).join(', ')}`,
  );
  const addTop = db.prepare(
    `INSERT INTO sluice_analytics_top (name, second, identity, limited) VALUES (?, ?, ?, ?) ON CONFLICT (name, second, identity) DO UPDATE SET limited = limited + excluded.limited`,
  );
  const pruneCounts = db.prepare(`DELETE FROM sluice_analytics WHERE name = ? AND second < ?`);
  const pruneTop = db.prepare(`DELETE FROM sluice_analytics_top WHERE name = ? AND second < ?`);
  const statements: Omit<Statements, 'publish'> = {
    addCounts,
    addTop,
    pruneCounts,
    pruneTop,
    readCounts: db.prepare(
      `SELECT second, ${COLUMNS.join(', ')} FROM sluice_analytics WHERE name = ? AND second BETWEEN ? AND ? ORDER BY second`,
    ),
    readTop: db.prepare(
      `SELECT second, identity, limited FROM sluice_analytics_top WHERE name = ? AND second BETWEEN ? AND ? ORDER BY second, limited DESC, identity`,
    ),
    names: db.prepare(`SELECT DISTINCT name FROM sluice_analytics WHERE second >= ? ORDER BY name`),
  };
  const publish = db.transaction((name: string, seconds: readonly AnalyticsSecond[], cutoff: number) => {
    for (const { second, counts, topLimited } of seconds) {
      if (second < cutoff) continue;
      addCounts.run(name, second, ...ANALYTICS_OUTCOMES.map((outcome) => counts[outcome] ?? 0));
      for (const [identity, limited] of topLimited) addTop.run(name, second, identity, limited);
    }
    pruneCounts.run(name, cutoff);
    pruneTop.run(name, cutoff);
  });
  return { ...statements, publish: (name, seconds, cutoff) => publish.immediate(name, seconds, cutoff) };
}

function failure(what: string, error: unknown): SluiceError {
  if (error instanceof SluiceError) return error;
  const message = error instanceof Error ? error.message : String(error);
  return new SluiceError('STORE_ERROR', `${WHERE}: ${what} failed: ${message} (${sqliteCode(error)})`, { cause: error });
}
