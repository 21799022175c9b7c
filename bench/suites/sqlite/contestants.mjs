// The single-process contestants of the sqlite suite. Each gets its own fresh database file in one temp folder,
// all in WAL mode with synchronous=NORMAL and better-sqlite3's default busy timeout, and walks the memory suite's
// workload (10,000 identities, same order). Each counts its allowed decisions (so the work cannot be optimised
// away) and the CPU time its rounds took (the wall time is what the harness reports; on a shared machine the CPU
// time says what a decision costs when the process is not waiting for a core).
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { createLimiter, tokenBucket } from '@sluice/core';
import { sqliteStore } from '@sluice/sqlite';
import { RateLimiterRes, RateLimiterSQLite } from 'rate-limiter-flexible';
import { median } from '../../lib/stats.mjs';
import { CAPACITY, MASK, REFILL_PER_SECOND, WINDOW_MS, consumeRlf, ids, order } from '../memory/workload.mjs';

export const SLUICE_SYNC = 'sluice limitSync()';
export const SLUICE_LIMIT = 'sluice limit()';
export const RLF = 'rate-limiter-flexible consume';
export const FLOOR = 'floor (one prepared UPSERT)';

/** Opens a file the way both libraries are benchmarked: WAL, synchronous=NORMAL. */
export function openDatabase(file) {
  const db = new Database(file);
  db.pragma('journal_mode = WAL');
  db.pragma('synchronous = NORMAL');
  return db;
}

export function sluiceLimiter(db) {
  // The store would set WAL and NORMAL itself; openDatabase already did, identically for every contestant.
  return createLimiter({
    store: sqliteStore(db),
    rules: tokenBucket({ capacity: CAPACITY, refillRate: REFILL_PER_SECOND, interval: '1s' }),
  });
}

/** RateLimiterSQLite has no token bucket: a fixed window of 100 points per 2 s, the same rate and burst. */
export function rlfLimiter(db) {
  return new Promise((resolve, reject) => {
    const limiter = new RateLimiterSQLite(
      { storeClient: db, storeType: 'better-sqlite3', tableName: 'rlf', points: CAPACITY, duration: WINDOW_MS / 1000 },
      (error) => (error ? reject(error) : resolve(limiter)),
    );
  });
}

/** The least a SQLite limiter can do per decision: one prepared fixed-window UPSERT, one autocommit write. */
export function floorLimiter(db) {
  db.exec('CREATE TABLE IF NOT EXISTS floor (key TEXT PRIMARY KEY, win INTEGER NOT NULL, n INTEGER NOT NULL) WITHOUT ROWID');
  const upsert = db
    .prepare(
      `INSERT INTO floor (key, win, n) VALUES (?, ?, 1)
       ON CONFLICT (key) DO UPDATE SET n = CASE WHEN win = excluded.win THEN n + 1 ELSE 1 END, win = excluded.win
       RETURNING n`,
    )
    .pluck();
  return (identity) => upsert.get(identity, Math.floor(Date.now() / WINDOW_MS)) <= CAPACITY;
}

function counted(name, rounds, body) {
  const tally = { allowed: 0, total: 0, cursor: 0, cpuNsPerOp: [] };
  const timed = (run) => async (n) => {
    const start = process.cpuUsage();
    await run(n);
    const used = process.cpuUsage(start);
    tally.cpuNsPerOp.push(((used.user + used.system) * 1000) / n);
  };
  const parts = body(tally);
  return {
    name,
    ...parts,
    run: timed(parts.run),
    extra: () => ({
      allowedPct: Math.round((tally.allowed / tally.total) * 1000) / 10,
      // The harness calls run() for warmup rounds first: the timed rounds are the last `rounds` calls.
      processCpuNsPerOp: Math.round(median(tally.cpuNsPerOp.slice(-rounds)) * 10) / 10,
    }),
  };
}

/** The contestants, and `close()` for their databases (call it after the harness is done). */
export function contestants(folder, rounds) {
  const databases = [];
  const open = (name) => {
    const db = openDatabase(join(folder, `${name}.db`));
    databases.push(db);
    return db;
  };
  const close = () => {
    for (const db of databases.splice(0)) if (db.open) db.close();
  };
  const list = [
    counted(SLUICE_SYNC, rounds, (tally) => {
      let limiter;
      return {
        setup: () => void (limiter = sluiceLimiter(open('sluice-sync'))),
        run(n) {
          let allowed = 0;
          let c = tally.cursor;
          for (let i = 0; i < n; i++) if (limiter.limitSync(ids[order[c++ & MASK]]).allowed) allowed++;
          tally.cursor = c;
          tally.allowed += allowed;
          tally.total += n;
        },
      };
    }),
    counted(SLUICE_LIMIT, rounds, (tally) => {
      let limiter;
      return {
        setup: () => void (limiter = sluiceLimiter(open('sluice-limit'))),
        async run(n) {
          let allowed = 0;
          let c = tally.cursor;
          for (let i = 0; i < n; i++) if ((await limiter.limit(ids[order[c++ & MASK]])).allowed) allowed++;
          tally.cursor = c;
          tally.allowed += allowed;
          tally.total += n;
        },
      };
    }),
    counted(RLF, rounds, (tally) => {
      let limiter;
      return {
        setup: async () => void (limiter = await rlfLimiter(open('rlf'))),
        run: (n) => consumeRlf(limiter, RateLimiterRes, order, tally, n),
      };
    }),
    counted(FLOOR, rounds, (tally) => {
      let take;
      return {
        setup: () => void (take = floorLimiter(open('floor'))),
        run(n) {
          let allowed = 0;
          let c = tally.cursor;
          for (let i = 0; i < n; i++) if (take(ids[order[c++ & MASK]])) allowed++;
          tally.cursor = c;
          tally.allowed += allowed;
          tally.total += n;
        },
      };
    }),
  ];
  return { list, close };
}
