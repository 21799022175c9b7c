/**
 * Outbound calls to a rate-limited third party (the article 'Rate limiting with Redis'), on the stores other than
 * Redis: `limiter.wait` books each slot with one atomic `reserve` in the shared store and then sleeps until it, so
 * processes sharing a store are queued at the rule's rate, in order. outbound.test.ts proves it across 16 processes
 * on Redis; this suite proves it on SQLite (one real file in a temp folder, each process its own better-sqlite3
 * connection) and on the Upstash REST store (each process its own @upstash/redis client against the project's REST
 * fixture over a redis-server this suite starts).
 *
 * For each store, 4 worker processes (./wait-store-worker.mjs), each with its own store instance and limiter
 * gcra({ id: 'api', limit: 20, period: '1s', burst: 1 }), call wait('shared', { maxWait: '30s' }) in a loop for 3 s
 * from a common start. What a user relies on, and what is checked:
 * - the booked starts, sorted, are at least one slot (50 ms) apart: no two waits across processes got the same
 *   slot, and no burst past the rule (exact, on the store's clock, no timer involved);
 * - the fleet is served at the rule's rate: at least 90% of 20 × 3 within the run, at most 20 booked starts in
 *   any 1000 ms, no wait resolved before its booked start, and at most 20 + 1 served times in any 1000 ms while
 *   the waits' lateness differs by less than a slot (see `servedInSpanBound`);
 * - FIFO: a wait begun more than one slot before another is never booked after it (nor, lateness aside, served);
 * - every process was served (the queue is shared, not four private ones), and no wait failed.
 */
import { fork, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { sqliteStore } from '@sluice/sqlite';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { startRedis, type RedisServer } from '../harness/redis.js';
import { startUpstashFixture, type UpstashFixture } from '../harness/upstash-fixture.js';

const WORKERS = 4;
const LIMIT = 20;
const SLOT_MS = 1000 / LIMIT;
const SECONDS = 3;

interface WaitRecord {
  worker: number;
  /** Date.now() when the wait was called, and right after it resolved (worker's clock: the machine's). */
  began: number;
  served: number;
  /** The booked start and the decision's `now`, on the store's clock (the limiter's on SQLite, Redis TIME on Upstash). */
  startAt: number;
  now: number;
}
interface Done {
  type: 'done';
  records: WaitRecord[];
  errors: string[];
}

const folder = mkdtempSync(join(tmpdir(), 'sluice-wait-stores-'));
const file = join(folder, 'shared.db');
let db: Database.Database | undefined;
let server: RedisServer | undefined;
let fixture: UpstashFixture | undefined;
const fleets: Record<'sqlite' | 'upstash', ChildProcess[]> = { sqlite: [], upstash: [] };
const rows: string[] = [];

function message<T>(child: ChildProcess, type: string): Promise<T> {
  return new Promise((resolve, reject) => {
    const onMessage = (m: { type: string }) => {
      if (m.type === type) {
        child.off('message', onMessage);
        child.off('exit', onExit);
        resolve(m as T);
      }
    };
    const onExit = (code: number | null) => reject(new Error(`worker ${child.pid} exited (${code}) before '${type}'`));
    child.on('message', onMessage);
    child.once('exit', onExit);
  });
}

function spawnFleet(kind: 'sqlite' | 'upstash', args: string[]): Promise<unknown[]> {
  for (let i = 0; i < WORKERS; i++) {
    fleets[kind].push(
      fork(new URL('./wait-store-worker.mjs', import.meta.url), [kind, ...args], { stdio: ['ignore', 'inherit', 'inherit', 'ipc'] }),
    );
  }
  return Promise.all(fleets[kind].map((child) => message(child, 'ready')));
}

beforeAll(async () => {
  db = new Database(file);
  sqliteStore(db); // creates the state table (WAL) before the workers open the file
  server = await startRedis(); // a missing redis-server is a loud error naming the install command
  fixture = await startUpstashFixture({ redisPort: server.port });
  await Promise.all([spawnFleet('sqlite', [file]), spawnFleet('upstash', [fixture.url, fixture.token])]);
});

afterAll(async () => {
  await Promise.all(
    [...fleets.sqlite, ...fleets.upstash].map(async (child) => {
      if (child.exitCode !== null || child.signalCode !== null) return;
      const exited = new Promise((r) => child.once('exit', r));
      if (child.connected) child.send({ type: 'stop' });
      const timer = setTimeout(() => child.kill('SIGKILL'), 5000);
      await exited;
      clearTimeout(timer);
    }),
  );
  if (rows.length > 0) console.log(['wait across processes, measured:', TABLE_HEAD, ...rows].join('\n'));
  await fixture?.close();
  await server?.stop();
  db?.close();
  rmSync(folder, { recursive: true, force: true });
});

async function run(kind: 'sqlite' | 'upstash') {
  const startAt = Date.now() + 300;
  const until = startAt + SECONDS * 1000;
  const replies = fleets[kind].map((child) => message<Done>(child, 'done'));
  fleets[kind].forEach((child, worker) => child.send({ type: 'run', identity: 'shared', limit: LIMIT, startAt, until, worker }));
  const done = await Promise.all(replies);
  return { startAt, until, records: done.flatMap((d) => d.records), errors: done.flatMap((d) => d.errors) };
}

/** The most values in any half-open span [t, t + spanMs). */
function maxInSpan(times: readonly number[], spanMs: number): number {
  const sorted = [...times].sort((a, b) => a - b);
  let most = 0;
  for (let i = 0, j = 0; j < sorted.length; j++) {
    while (sorted[j]! - sorted[i]! >= spanMs) i++;
    most = Math.max(most, j - i + 1);
  }
  return most;
}

/**
 * The most served times any 1000 ms may hold. Booked starts at least one slot apart put at most LIMIT in a half-open
 * second (exact, checked on the starts). A wait resolves its lateness d after its start: the timer's and the event
 * loop's delay, plus, on a client-clock store, the store call itself (the wait is counted from the decision's `now`,
 * read before the call). A serve late by d followed by one on time shortens that gap to one slot − d, so a second of
 * served times can hold one more: LIMIT + 1 while the lateness of the waits differs by less than a slot (a few ms on
 * an idle machine). On a loaded machine (2 cores, load 7) single SQLite waits were seen resolving 50-120 ms late (a
 * store call blocked 25 ms on another process's write lock); the bound then grows by one per slot of spread, which
 * is what a third party counting arrivals would see (hence the margin below the published limit that
 * examples/outbound-workers keeps).
 */
function servedInSpanBound(lateSpreadMs: number): number {
  return LIMIT + Math.max(1, Math.ceil(lateSpreadMs / SLOT_MS));
}

/** Pairs where a wait begun more than one slot before another was booked (`startAt`) or served after it. */
function inversions(records: readonly WaitRecord[], by: 'startAt' | 'served'): number {
  const byBegan = [...records].sort((a, b) => a.began - b.began);
  let count = 0;
  for (let i = 0; i < byBegan.length; i++) {
    for (let j = i + 1; j < byBegan.length; j++) {
      if (byBegan[j]!.began - byBegan[i]!.began > SLOT_MS && byBegan[i]![by] > byBegan[j]![by]) count++;
    }
  }
  return count;
}

const quantile = (values: readonly number[], q: number) => {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))] ?? NaN;
};

const TABLE_HEAD =
  'store    served in run (min)  booked in 1 s (≤)  served in 1 s (≤)  booked gap min ms  same slot  FIFO inversions booked/served  late ms min/p50/p95/max  per worker';

describe.each(['sqlite', 'upstash'] as const)(`${WORKERS} processes waiting on one %s store, gcra ${LIMIT}/s burst 1`, (kind) => {
  test(`${SECONDS} s of wait(): booked slots ≥ ${SLOT_MS} ms apart, ~${LIMIT}/s served, FIFO, every process served`, async () => {
    const { startAt, until, records, errors } = await run(kind);
    const inRun = records.filter((r) => r.served >= startAt && r.served <= until);
    const starts = records.map((r) => r.startAt).sort((a, b) => a - b);
    const gaps = starts.slice(1).map((s, i) => s - starts[i]!);
    const minGap = gaps.length > 0 ? gaps.reduce((a, b) => Math.min(a, b), Infinity) : NaN;
    const sameSlot = gaps.filter((g) => g === 0).length;
    const bookedInSecond = maxInSpan(starts, 1000);
    const servedInSecond = maxInSpan(
      records.map((r) => r.served),
      1000,
    );
    const fifo = inversions(records, 'served');
    const bookedFifo = inversions(records, 'startAt');
    // Lateness: how long after its booked start a wait resolved. The booked start is on the store's clock and the
    // served time on the machine's; both are this machine's clock here (the limiter's, or Redis TIME on 127.0.0.1).
    const late = records.map((r) => r.served - r.startAt);
    const lateMin = late.reduce((a, b) => Math.min(a, b), Infinity);
    const lateMax = late.reduce((a, b) => Math.max(a, b), -Infinity);
    const lateSpread = lateMax - lateMin;
    const servedBound = servedInSpanBound(lateSpread);
    const perWorker = Array.from({ length: WORKERS }, (_, w) => records.filter((r) => r.worker === w).length);
    const minServed = Math.ceil(0.9 * LIMIT * SECONDS);
    rows.push(
      `${kind.padEnd(7)}  ${`${inRun.length} (${minServed})`.padStart(19)}  ${`${bookedInSecond} (${LIMIT})`.padStart(17)}  ${`${servedInSecond} (${servedBound})`.padStart(17)}  ${String(minGap).padStart(17)}  ` +
        `${String(sameSlot).padStart(9)}  ${`${bookedFifo}/${fifo}`.padStart(22)}  ${`${lateMin}/${quantile(late, 0.5)}/${quantile(late, 0.95)}/${lateMax}`.padStart(22)}  ${perWorker.join(', ')}`,
    );
    if (errors.length > 0) console.log(`[wait ${kind}] errors (first 3 of ${errors.length}):\n${errors.slice(0, 3).join('\n')}`);

    expect(errors).toEqual([]);
    expect(sameSlot).toBe(0);
    expect(minGap).toBeGreaterThanOrEqual(SLOT_MS);
    expect(inRun.length).toBeGreaterThanOrEqual(minServed);
    expect(bookedInSecond).toBeLessThanOrEqual(LIMIT);
    // Never served before its booked start (1 ms: the two clocks are read in whole ms at different instants).
    expect(lateMin).toBeGreaterThanOrEqual(-1);
    expect(servedInSecond).toBeLessThanOrEqual(servedBound);
    // FIFO is the booking order: the store books in the order the reserves reach it. The served order is the same
    // except where one wait resolved more than a slot later than another (the lateness above; seen at 63 and 121 ms
    // under load): served inversions are reported, not asserted.
    expect(bookedFifo).toBe(0);
    for (const count of perWorker) expect(count).toBeGreaterThan(0);
  }, 20_000);
});
