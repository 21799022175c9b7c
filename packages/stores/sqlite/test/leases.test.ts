import Database from 'better-sqlite3';
import { createLimiter, fixedWindow, isSluiceError } from '@sluice/core';
import { createConcurrencyLimiter } from '@sluice/core/concurrency';
import type { LeaseRequest } from '@sluice/core/store';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { sqliteStore } from '../src/index.js';
import { tempFolder } from './helpers.js';

// The store's own side of concurrency leases (the semantics are the conformance suite's 'concurrency leases' group):
// the row they live in, what a lease operation runs, and how expired lease rows go.
const folder = tempFolder('leases');
let counter = 0;
const open: Database.Database[] = [];

function database(options?: Database.Options): Database.Database {
  const db = new Database(folder.file(`leases${++counter}.db`), options);
  open.push(db);
  return db;
}

afterEach(() => {
  for (const db of open.splice(0)) if (db.open) db.close();
});
afterAll(() => folder.remove());

const CLOCK_START = 1_800_000_000_000;
const KEY = 'sluice:default:{alice}';

function request(op: LeaseRequest['op'], id: string, now: number, ttlMs = 1000, limit = 2): LeaseRequest {
  return { key: KEY, op, id, limit, ttlMs, now };
}

function rows(db: Database.Database): unknown[] {
  return db.prepare('SELECT key, rule, state, expires_at FROM sluice_state ORDER BY key, rule').raw().all();
}

describe('concurrency leases', () => {
  it("announces 'lease', and keeps one row per key: `key:lease`, rule '', the leases in order, the latest expiry", () => {
    const db = database();
    const store = sqliteStore(db);
    expect(store.capabilities.operations).toContain('lease');
    expect(store.lease(request('acquire', 'a', CLOCK_START, 1000))).toEqual({
      now: CLOCK_START,
      ok: true,
      held: 1,
      expiresAt: CLOCK_START + 1000,
    });
    expect(store.lease(request('acquire', 'b', CLOCK_START + 10, 500))).toEqual({
      now: CLOCK_START + 10,
      ok: true,
      held: 2,
      expiresAt: CLOCK_START + 510,
    });
    expect(rows(db)).toEqual([[`${KEY}:lease`, '', `a:${CLOCK_START + 1000},b:${CLOCK_START + 510}`, CLOCK_START + 1000]]);
    // Refused: the earliest expiry held.
    expect(store.lease(request('acquire', 'c', CLOCK_START + 20))).toEqual({
      now: CLOCK_START + 20,
      ok: false,
      held: 2,
      expiresAt: CLOCK_START + 510,
    });
    expect(store.lease(request('release', 'a', CLOCK_START + 30))).toEqual({ now: CLOCK_START + 30, ok: true, held: 1, expiresAt: -1 });
    expect(rows(db)).toEqual([[`${KEY}:lease`, '', `b:${CLOCK_START + 510}`, CLOCK_START + 510]]);
    expect(store.lease(request('extend', 'b', CLOCK_START + 40, 2000))).toEqual({
      now: CLOCK_START + 40,
      ok: true,
      held: 1,
      expiresAt: CLOCK_START + 2040,
    });
    expect(store.lease(request('release', 'b', CLOCK_START + 50))).toMatchObject({ ok: true, held: 0 });
    expect(rows(db)).toEqual([]);
    // Nothing held: a release or an extend writes no row.
    expect(store.lease(request('release', 'b', CLOCK_START + 60))).toEqual({ now: CLOCK_START + 60, ok: false, held: 0, expiresAt: -1 });
    expect(store.lease(request('extend', 'b', CLOCK_START + 60))).toEqual({ now: CLOCK_START + 60, ok: false, held: 0, expiresAt: -1 });
    expect(rows(db)).toEqual([]);
  });

  it('leases and rule states of one identity live apart: reset and decisions leave the leases alone', async () => {
    const db = database();
    const store = sqliteStore(db);
    const limiter = createLimiter({ store, rules: fixedWindow({ limit: 1, window: '1m' }), clock: () => CLOCK_START });
    const inFlight = createConcurrencyLimiter({ store, limit: 1, clock: () => CLOCK_START });
    expect((await inFlight.acquire('alice')).allowed).toBe(true);
    expect(limiter.limitSync('alice').allowed).toBe(true);
    await limiter.reset('alice');
    expect((await inFlight.acquire('alice')).allowed).toBe(false);
    expect(limiter.limitSync('alice').allowed).toBe(true);
  });

  it('an expired row is no lease at all, and goes when the operation leaves nothing', () => {
    const db = database();
    const store = sqliteStore(db);
    store.lease(request('acquire', 'a', CLOCK_START, 1000, 1));
    expect(store.lease(request('acquire', 'b', CLOCK_START + 999, 1000, 1)).ok).toBe(false);
    expect(store.lease(request('release', 'a', CLOCK_START + 1000))).toEqual({
      now: CLOCK_START + 1000,
      ok: false,
      held: 0,
      expiresAt: -1,
    });
    expect(rows(db)).toEqual([]);
    expect(store.lease(request('acquire', 'b', CLOCK_START + 1000, 1000, 1)).ok).toBe(true);
  });

  it('rejects a bad id, op or key naming the field, before touching the file', () => {
    const store = sqliteStore(database());
    const cases: Array<[Partial<LeaseRequest>, RegExp]> = [
      [{ id: 'has space' }, /lease request\.id must be 1 to 64 characters/],
      [{ id: 'x'.repeat(65) }, /lease request\.id/],
      [{ id: 'a:b' }, /lease request\.id/],
      [{ id: 42 as unknown as string }, /lease request\.id .* got 42/],
      [{ op: 'renew' as LeaseRequest['op'] }, /lease request\.op must be 'acquire', 'release' or 'extend'/],
      [{ key: undefined as unknown as string }, /lease request\.key must be a string/],
    ];
    for (const [change, message] of cases) {
      let caught: unknown;
      try {
        store.lease({ ...request('acquire', 'a', CLOCK_START), ...change });
      } catch (error) {
        caught = error;
      }
      expect(isSluiceError(caught) && caught.code === 'INVALID_OPTION', String(caught)).toBe(true);
      expect(String((caught as Error).message)).toMatch(message);
    }
  });

  it('drops a malformed entry of a damaged row instead of trusting it', () => {
    const db = database();
    const store = sqliteStore(db);
    store.lease(request('acquire', 'a', CLOCK_START, 1000, 2));
    db.prepare(`UPDATE sluice_state SET state = 'garbage,' || state || ',b:NaN,c:'`).run();
    expect(store.lease(request('acquire', 'b', CLOCK_START + 1, 1000, 2))).toMatchObject({ ok: true, held: 2 });
    expect(rows(db)).toEqual([[`${KEY}:lease`, '', `a:${CLOCK_START + 1000},b:${CLOCK_START + 1001}`, CLOCK_START + 1001]]);
  });

  it('the sweep and purgeExpired delete expired lease rows like any row', () => {
    const db = database();
    const store = sqliteStore(db, { sweepEvery: 4, sweepBatch: 100 });
    for (let i = 0; i < 3; i++) store.lease({ ...request('acquire', 'a', CLOCK_START), key: `sluice:default:{u${i}}` });
    expect(rows(db)).toHaveLength(3);
    // Long after expiry (grace included), the fourth write sweeps the three away; its own row stays.
    store.lease({ ...request('acquire', 'a', CLOCK_START + 3_600_000), key: 'sluice:default:{z}' });
    expect((rows(db) as Array<[string]>).map((r) => r[0])).toEqual(['sluice:default:{z}:lease']);
    expect(store.purgeExpired(CLOCK_START + 3_600_000 + 1000)).toBe(1);
    expect(rows(db)).toEqual([]);
  });

  it('never scans the table: every statement a lease operation runs searches the primary key', () => {
    const executed = new Set<string>();
    const db = database({ verbose: (sql) => executed.add(String(sql)) });
    const store = sqliteStore(db, { sweepEvery: 3, sweepBatch: 2 });
    executed.clear();
    for (let i = 0; i < 8; i++) {
      store.lease({ ...request('acquire', `l${i}`, CLOCK_START + i), key: `sluice:default:{u${i % 3}}` });
      store.lease({ ...request(i % 2 === 0 ? 'release' : 'extend', `l${i}`, CLOCK_START + i), key: `sluice:default:{u${i % 3}}` });
    }
    const statements = [...executed].filter((sql) => !/^(BEGIN|COMMIT|ROLLBACK|SAVEPOINT|RELEASE)/.test(sql));
    expect(statements.some((sql) => /^DELETE FROM "sluice_state" WHERE \(key, rule\) > /.test(sql))).toBe(true); // a sweep ran
    for (const sql of statements) {
      const plan = (db.prepare(`EXPLAIN QUERY PLAN ${sql}`).all() as Array<{ detail: string }>).map((r) => r.detail).join(' | ');
      if (plan === '' && /^INSERT/.test(sql)) continue;
      expect(plan, sql).toMatch(/^SEARCH sluice_state USING PRIMARY KEY \(/);
    }
  });

  it('runs in an IMMEDIATE transaction: a connection holding the write lock makes it wait, then fail as a store error', () => {
    const file = folder.file(`locked${++counter}.db`);
    const blocker = new Database(file);
    open.push(blocker);
    const connection = new Database(file);
    open.push(connection);
    const store = sqliteStore(connection, { busyTimeout: 50 });
    blocker.exec('BEGIN IMMEDIATE');
    let caught: unknown;
    try {
      store.lease(request('acquire', 'a', CLOCK_START));
    } catch (error) {
      caught = error;
    }
    blocker.exec('ROLLBACK');
    expect(isSluiceError(caught) && caught.code === 'STORE_ERROR', String(caught)).toBe(true);
    expect(String((caught as Error).message)).toMatch(/sqliteStore: lease gave up: another connection held the database lock/);
    expect(store.lease(request('acquire', 'a', CLOCK_START)).ok).toBe(true);
  });
});
