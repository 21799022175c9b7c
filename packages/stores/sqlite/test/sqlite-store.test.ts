import Database from 'better-sqlite3';
import { createLimiter, fixedWindow, isSluiceError, slidingWindowCounter, tokenBucket } from '@sluice/core';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { SCHEMA_VERSION, sqliteStore, type SqliteDatabase } from '../src/index.js';
import { tempFolder } from './helpers.js';

const folder = tempFolder('store');
let counter = 0;
const open: Database.Database[] = [];

function database(name = `db${++counter}.db`, options?: Database.Options): Database.Database {
  const db = new Database(folder.file(name), options);
  open.push(db);
  return db;
}

afterEach(() => {
  for (const db of open.splice(0)) if (db.open) db.close();
});
afterAll(() => folder.remove());

const CLOCK_START = 1_800_000_000_000;

describe('construction', () => {
  it('creates its tables and schema version, and sets WAL, busy_timeout and synchronous', () => {
    const db = database();
    const store = sqliteStore(db, { busyTimeout: 750 });
    const objects = db.prepare(`SELECT type, name FROM sqlite_master ORDER BY name`).all();
    expect(objects).toEqual([
      { type: 'table', name: 'sluice_state' },
      { type: 'table', name: 'sluice_state_meta' },
    ]);
    expect(db.prepare(`SELECT value FROM sluice_state_meta WHERE name = 'schema_version'`).get()).toEqual({ value: SCHEMA_VERSION });
    expect(db.pragma('journal_mode', { simple: true })).toBe('wal');
    expect(store.journalMode).toBe('wal');
    expect(db.pragma('busy_timeout', { simple: true })).toBe(750);
    expect(store.busyTimeoutMs).toBe(750);
    expect(db.pragma('synchronous', { simple: true })).toBe(1); // NORMAL
    expect(db.pragma('user_version', { simple: true })).toBe(0); // the application's, untouched
  });

  it("keeps the connection's busy_timeout by default, and replaces a 0 with 5000 ms", () => {
    expect(sqliteStore(database(undefined, { timeout: 1234 })).busyTimeoutMs).toBe(1234);
    expect(sqliteStore(database(undefined, { timeout: 0 })).busyTimeoutMs).toBe(5000);
    expect(sqliteStore(database(undefined, { timeout: 0 }), { busyTimeout: 0 }).busyTimeoutMs).toBe(0);
    expect(sqliteStore(database(undefined, { timeout: 0 }), { busyTimeout: '0ms' }).busyTimeoutMs).toBe(0);
  });

  it("busyTimeout takes a duration: '1s' and 1000 set the same busy_timeout", () => {
    for (const busyTimeout of ['1s', 1000] as const) {
      const db = database();
      expect(sqliteStore(db, { busyTimeout }).busyTimeoutMs).toBe(1000);
      expect(db.pragma('busy_timeout', { simple: true })).toBe(1000);
    }
  });

  it('busyTimeout: a bad value is refused naming the field, the former name busyTimeoutMs with the current one', () => {
    const db = database();
    expect(() => sqliteStore(db, { busyTimeout: '5 sec' as never })).toThrow(
      /^\[sluice\] sqliteStore: busyTimeout must be a duration from 0 to 2147483647 ms \(a whole number of ms or a string like '250ms', '1s'/,
    );
    expect(() => sqliteStore(db, { busyTimeout: 2 ** 31 })).toThrow(/sqliteStore: busyTimeout must be a duration from 0 to 2147483647 ms/);
    expect(() => sqliteStore(db, { busyTimeoutMs: 1000 } as never)).toThrow(
      expect.objectContaining({
        code: 'UNKNOWN_OPTION',
        message: expect.stringMatching(/sqliteStore: unknown option "busyTimeoutMs"; accepted options are .*busyTimeout/),
      }),
    );
  });

  it('leaves the journal mode and synchronous alone when told to', () => {
    const db = database();
    const store = sqliteStore(db, { wal: false, synchronous: 'keep', table: 'limits' });
    expect(store.journalMode).toBe('delete');
    expect(db.pragma('synchronous', { simple: true })).toBe(2); // FULL, better-sqlite3's default
    expect(store.table).toBe('limits');
    expect(db.prepare(`SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name`).pluck().all()).toEqual([
      'limits',
      'limits_meta',
    ]);
  });

  it('works in memory, where there is no WAL to set', () => {
    const db = new Database(':memory:');
    open.push(db);
    const store = sqliteStore(db);
    expect(store.journalMode).toBe('memory');
    const limiter = createLimiter({ store, rules: fixedWindow({ limit: 1, window: '1m' }), clock: () => CLOCK_START });
    expect(limiter.limitSync('a').allowed).toBe(true);
    expect(limiter.limitSync('a').allowed).toBe(false);
  });

  it('opens a file created earlier and keeps its state', () => {
    const name = 'reopen.db';
    const rules = fixedWindow({ limit: 2, window: '1m' });
    const first = createLimiter({ store: sqliteStore(database(name)), rules, clock: () => CLOCK_START });
    expect(first.limitSync('a').remaining).toBe(1);
    open.pop()!.close();
    const second = createLimiter({ store: sqliteStore(database(name)), rules, clock: () => CLOCK_START });
    expect(second.limitSync('a').remaining).toBe(0);
  });

  it('recreates a state table that was dropped by hand', () => {
    const db = database();
    sqliteStore(db);
    db.exec('DROP TABLE sluice_state');
    const limiter = createLimiter({ store: sqliteStore(db), rules: fixedWindow({ limit: 1, window: '1m' }), clock: () => CLOCK_START });
    expect(limiter.limitSync('a').allowed).toBe(true);
  });

  it('refuses a table written by a newer schema version, naming the fix', () => {
    const db = database();
    sqliteStore(db);
    db.prepare(`UPDATE sluice_state_meta SET value = ? WHERE name = 'schema_version'`).run(SCHEMA_VERSION + 1);
    expect(() => sqliteStore(db)).toThrow(/schema version 2, written by a newer @sluice\/sqlite.*upgrade/);
  });

  it('validates its arguments with stable codes and messages that name the field', () => {
    const db = database();
    const codeOf = (fn: () => unknown) => {
      try {
        fn();
      } catch (error) {
        return isSluiceError(error) ? `${error.code}: ${error.message}` : `not a SluiceError: ${String(error)}`;
      }
      return 'no error';
    };
    expect(codeOf(() => sqliteStore({} as SqliteDatabase))).toMatch(/^INVALID_OPTION: .*db must be a better-sqlite3 Database/);
    expect(codeOf(() => sqliteStore(db, { tabel: 'x' } as never))).toMatch(/^UNKNOWN_OPTION: .*"tabel"; accepted options are table, wal/);
    expect(codeOf(() => sqliteStore(db, { table: 'x; DROP' }))).toMatch(/^INVALID_OPTION: .*table must be/);
    expect(codeOf(() => sqliteStore(db, { wal: 'yes' as never }))).toMatch(/^INVALID_OPTION: .*wal must be true or false/);
    expect(codeOf(() => sqliteStore(db, { busyTimeout: -5 }))).toMatch(/^INVALID_OPTION: .*busyTimeout must be a duration/);
    expect(codeOf(() => sqliteStore(db, { synchronous: 'off' as never }))).toMatch(/^INVALID_OPTION: .*synchronous must be/);
    expect(codeOf(() => sqliteStore(db, { sweepEvery: 0 }))).toMatch(/^INVALID_OPTION: .*sweepEvery must be an integer/);
    expect(codeOf(() => sqliteStore(db, { sweepBatch: 1.5 }))).toMatch(/^INVALID_OPTION: .*sweepBatch must be an integer/);
    const closed = database();
    closed.close();
    expect(codeOf(() => sqliteStore(closed))).toMatch(/^INVALID_OPTION: .*db is closed/);
  });

  it('accepts a better-sqlite3 Database where SqliteDatabase is expected (type test)', () => {
    const db: SqliteDatabase = database();
    expect(db.open).toBe(true);
  });
});

describe('decisions', () => {
  it('runs compound rules all-or-nothing: a denial by one rule charges none', () => {
    const db = database();
    const limiter = createLimiter({
      store: sqliteStore(db),
      rules: [fixedWindow({ limit: 10, window: '1m' }), tokenBucket({ capacity: 2, refillRate: 1, interval: '1m' })],
      clock: () => CLOCK_START,
    });
    const allowed = Array.from({ length: 5 }, () => limiter.limitSync('a').allowed);
    expect(allowed).toEqual([true, true, false, false, false]);
    const window = db.prepare(`SELECT state FROM sluice_state WHERE rule = 'fw:60000'`).pluck().get() as string;
    expect(window.split(',').map(Number)).toEqual([CLOCK_START - (CLOCK_START % 60_000), 2]);
  });

  it('peek and zero cost read without writing a row', () => {
    const db = database();
    const limiter = createLimiter({ store: sqliteStore(db), rules: fixedWindow({ limit: 3, window: '1m' }), clock: () => CLOCK_START });
    expect(limiter.peekSync('a').remaining).toBe(3);
    expect(limiter.limitSync('a', { cost: 0 }).remaining).toBe(3);
    expect(db.prepare('SELECT count(*) FROM sluice_state').pluck().get()).toBe(0);
    limiter.limitSync('a');
    expect(limiter.peekSync('a').remaining).toBe(2);
  });

  it('refund gives back, and a row whose state is back to full is deleted', () => {
    const db = database();
    const limiter = createLimiter({
      store: sqliteStore(db),
      rules: tokenBucket({ capacity: 5, refillRate: 1, interval: '1s' }),
      clock: () => CLOCK_START,
    });
    limiter.limitSync('a', { cost: 2 });
    expect(db.prepare('SELECT count(*) FROM sluice_state').pluck().get()).toBe(1);
    expect(limiter.refundSync('a', { cost: 2 }).remaining).toBe(5);
    expect(db.prepare('SELECT count(*) FROM sluice_state').pluck().get()).toBe(0);
  });

  it('reset forgets one identity and only it', async () => {
    const db = database();
    const limiter = createLimiter({ store: sqliteStore(db), rules: fixedWindow({ limit: 1, window: '1m' }), clock: () => CLOCK_START });
    limiter.limitSync('a');
    limiter.limitSync('b');
    await limiter.reset('a');
    expect(limiter.limitSync('a').allowed).toBe(true);
    expect(limiter.limitSync('b').allowed).toBe(false);
  });

  it('treats an expired row as absent, with rows written through the limiter clock', () => {
    let now = CLOCK_START;
    const limiter = createLimiter({ store: sqliteStore(database()), rules: fixedWindow({ limit: 1, window: '1s' }), clock: () => now });
    expect(limiter.limitSync('a').allowed).toBe(true);
    expect(limiter.limitSync('a').allowed).toBe(false);
    now += 1000;
    expect(limiter.limitSync('a').allowed).toBe(true);
  });

  it('starts fresh from a corrupt state record instead of admitting NaN', () => {
    const db = database();
    const limiter = createLimiter({ store: sqliteStore(db), rules: fixedWindow({ limit: 2, window: '1m' }), clock: () => CLOCK_START });
    limiter.limitSync('a');
    db.prepare(`UPDATE sluice_state SET state = 'garbage,x'`).run();
    expect(limiter.limitSync('a').remaining).toBe(1);
  });

  it('returns plain numbers on a connection set to defaultSafeIntegers', () => {
    const db = database();
    db.defaultSafeIntegers(true);
    const limiter = createLimiter({ store: sqliteStore(db), rules: fixedWindow({ limit: 2, window: '1m' }), clock: () => CLOCK_START });
    limiter.limitSync('a');
    const decision = limiter.limitSync('a');
    expect(decision.remaining).toBe(0);
    expect(typeof decision.resetAt).toBe('number');
  });

  it('runs inside an application transaction as a savepoint, rolled back with it', () => {
    const db = database();
    const limiter = createLimiter({ store: sqliteStore(db), rules: fixedWindow({ limit: 5, window: '1m' }), clock: () => CLOCK_START });
    const work = db.transaction(() => {
      limiter.limitSync('a');
      throw new Error('the application rolls back');
    });
    expect(() => work()).toThrow('the application rolls back');
    expect(limiter.peekSync('a').remaining).toBe(5);
  });
});

describe('expiry', () => {
  it('sweeps incrementally: every sweepEvery writes it examines the next sweepBatch rows and deletes the expired', () => {
    const db = database();
    let now = CLOCK_START;
    const limiter = createLimiter({
      store: sqliteStore(db, { sweepEvery: 10, sweepBatch: 4 }),
      rules: fixedWindow({ limit: 5, window: '1s' }),
      clock: () => now,
    });
    const keys = () => (db.prepare('SELECT key FROM sluice_state ORDER BY key').pluck().all() as string[]).map((k) => k.slice(16, -1));
    for (let i = 0; i < 9; i++) limiter.limitSync(`a${i}`);
    now += 61_000; // a0..a8 have expired, and their grace (EXPIRY_GRACE_MS) has passed
    limiter.limitSync('z00'); // 10th write: examines a0..a3
    expect(keys()).toEqual(['a4', 'a5', 'a6', 'a7', 'a8', 'z00']);
    for (let i = 1; i <= 10; i++) limiter.limitSync(`z${String(i).padStart(2, '0')}`); // 20th write: a4..a7
    expect(keys().slice(0, 3)).toEqual(['a8', 'z00', 'z01']);
    for (let i = 11; i <= 20; i++) limiter.limitSync(`z${i}`); // 30th write: a8 and three live rows
    expect(keys()).toHaveLength(21);
    expect(keys()[0]).toBe('z00');
    now += 61_000; // every z row has expired (grace included); the sweep goes on from z02 to the end, then starts over
    for (let i = 0; i < 10; i++) limiter.limitSync(`b${i}`); // 40th write: z03..z06
    expect(keys()).toHaveLength(21 - 4 + 10);
    expect(keys()).not.toContain('z03');
    expect(keys()).toContain('z00'); // before the cursor: waits for the next pass
  });

  it('purgeExpired deletes every expired row at once', () => {
    const db = database();
    let now = CLOCK_START;
    const store = sqliteStore(db);
    const limiter = createLimiter({ store, rules: fixedWindow({ limit: 5, window: '1s' }), clock: () => now });
    for (let i = 0; i < 5; i++) limiter.limitSync(`a${i}`);
    now += 60_000;
    limiter.limitSync('b');
    expect(store.purgeExpired(now)).toBe(5);
    expect(db.prepare('SELECT count(*) FROM sluice_state').pluck().get()).toBe(1);
  });

  it('never scans the table on the hot path: every statement a decision runs searches the primary key', () => {
    const executed = new Set<string>();
    const db = database(undefined, { verbose: (sql) => executed.add(String(sql)) });
    let now = CLOCK_START;
    const store = sqliteStore(db, { sweepEvery: 3, sweepBatch: 2 });
    const single = createLimiter({ store, rules: tokenBucket({ capacity: 3, refillRate: 1, interval: '1s' }), clock: () => now });
    const compound = createLimiter({
      store,
      name: 'compound',
      rules: [fixedWindow({ limit: 2, window: '1s' }), tokenBucket({ capacity: 5, refillRate: 1, interval: '1s' })],
      clock: () => now,
    });
    executed.clear(); // only what decisions run, not the setup
    for (let i = 0; i < 12; i++) {
      single.limitSync(`user${i % 4}`);
      compound.limitSync(`user${i % 4}`);
      single.peekSync(`user${i % 4}`);
      compound.peekSync(`user${i % 4}`);
      now += 400;
    }
    single.refundSync('user0', { cost: 3 }); // back to full: the row is deleted
    store.reset('sluice:compound:{user1}', ['fw:1000', 'tb']);
    const statements = [...executed].filter((sql) => !/^(BEGIN|COMMIT|ROLLBACK|SAVEPOINT|RELEASE)/.test(sql));
    const kinds = [
      /^SELECT state, expires_at FROM "sluice_state" WHERE key = /,
      /^SELECT rule, state, expires_at FROM "sluice_state" WHERE key = /,
      /^INSERT INTO "sluice_state" .* ON CONFLICT/s,
      /^DELETE FROM "sluice_state" WHERE key = .* AND rule = /,
      /^SELECT key, rule FROM "sluice_state" WHERE \(key, rule\) > .* LIMIT 1 OFFSET/,
      /^DELETE FROM "sluice_state" WHERE \(key, rule\) > .* AND expires_at <= /,
    ];
    for (const kind of kinds)
      expect(
        statements.some((sql) => kind.test(sql)),
        String(kind),
      ).toBe(true);
    for (const sql of statements) {
      const plan = (db.prepare(`EXPLAIN QUERY PLAN ${sql}`).all() as Array<{ detail: string }>).map((r) => r.detail).join(' | ');
      if (plan === '' && /^INSERT/.test(sql)) continue; // an upsert has no plan line: its conflict check is a primary-key seek
      expect(plan, sql).toMatch(/^SEARCH sluice_state USING PRIMARY KEY \(/);
      expect(plan, sql).not.toMatch(/SCAN/);
    }
  });
});

describe('a clock that steps back', () => {
  it('regression: cost 0 after a backward step is allowed (a sliding window counter denied it)', () => {
    let now = 996;
    const limiter = createLimiter({
      store: sqliteStore(database()),
      rules: slidingWindowCounter({ limit: 1, window: 10 }),
      clock: () => now,
    });
    limiter.limitSync('k');
    now = 1002;
    expect(limiter.limitSync('k').allowed).toBe(true);
    now = 999;
    expect(limiter.limitSync('k', { cost: 0 }).allowed).toBe(true);
  });

  it('the sweep keeps an expired row for EXPIRY_GRACE_MS, so a clock stepping back within it finds the state', () => {
    const db = database();
    let now = CLOCK_START;
    const limiter = createLimiter({
      store: sqliteStore(db, { sweepEvery: 2, sweepBatch: 64 }),
      rules: fixedWindow({ limit: 1, window: '1s' }),
      clock: () => now,
    });
    limiter.limitSync('old');
    now = CLOCK_START + 59_000;
    for (let i = 0; i < 8; i++) limiter.limitSync(`filler-${i}`);
    now = CLOCK_START + 10;
    expect(limiter.limitSync('old').allowed).toBe(false);
  });
});
