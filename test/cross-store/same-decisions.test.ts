/**
 * Cross-store equality: the same rules, the same identity and the same clock readings give the same decision on
 * every store, field for field. Memory and SQLite run core's steps in JavaScript; Redis (client clock) and Upstash
 * (client clock, through the REST fixture) run the Lua script. The clock is driven by the test and steps backwards
 * as several app servers with clocks a few ms apart make it step: that is where the executors used to disagree (a
 * refunded-to-full state kept by memory and deleted by the others; cost 0 denied by the script; an expired
 * sliding-window-counter state read differently). Every operation runs, through the limiters' own methods: limit, peek,
 * refund, take and reserve (maxWait 0, short or huge), on every algorithm and on compound rules.
 *
 * Each sequence runs in a few ms of real time, far inside the Redis store's real-time expiry slack, so a key
 * Redis drops by real time cannot explain a difference.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import fc from 'fast-check';
import { Redis as IORedis } from 'ioredis';
import { Redis as UpstashRedis } from '@upstash/redis';
import { createLimiter, fixedWindow, slidingWindowCounter, type Decision, type Limiter, type Rule, type Store } from '@sluice/core';
import type { ResolvedRule } from '@sluice/core/store';
import { memoryStore } from '@sluice/memory';
import { redisStore } from '@sluice/redis';
import { sqliteStore } from '@sluice/sqlite';
import { upstashStore } from '@sluice/upstash';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { startRedis, type RedisServer } from '../harness/redis.js';
import { startUpstashFixture, type UpstashFixture } from '../harness/upstash-fixture.js';
import { ALGORITHMS, compoundRules, events, ruleOf, startMs, type Event } from '../harness/arbitraries.js';

let server: RedisServer;
let fixture: UpstashFixture;
let ioredis: IORedis;
let directory: string;
let db: Database.Database;
let stores: Array<{ name: string; store: Store }>;
let run = 0;
const stats = { sequences: 0, decisions: 0, backwardSteps: 0, operations: { consume: 0, peek: 0, refund: 0, take: 0, reserve: 0 } };

beforeAll(async () => {
  server = await startRedis();
  fixture = await startUpstashFixture({ redisPort: server.port });
  ioredis = new IORedis({ host: server.host, port: server.port, lazyConnect: true });
  await ioredis.connect();
  directory = mkdtempSync(join(tmpdir(), 'sluice-cross-store-'));
  db = new Database(join(directory, 'limits.db'));
  const upstash = new UpstashRedis({ url: fixture.url, token: fixture.token, enableTelemetry: false });
  stores = [
    { name: 'memory', store: memoryStore() },
    { name: 'sqlite', store: sqliteStore(db) },
    { name: 'redis', store: redisStore(ioredis, { clock: 'client' }) },
    { name: 'upstash', store: upstashStore(upstash, { clock: 'client' }) },
  ];
});

afterAll(async () => {
  console.log(
    `[cross-store] ${stats.sequences} sequences, ${stats.decisions} decisions on ${stores?.length ?? 0} stores, ${stats.backwardSteps} backward clock steps; operations ${JSON.stringify(stats.operations)}`,
  );
  ioredis?.disconnect();
  db?.close();
  if (directory !== undefined) rmSync(directory, { recursive: true, force: true });
  await fixture?.close();
  await server?.stop();
});

/** What a decision says, without the error object (none is expected: every store must answer). */
function view(decision: Decision) {
  const { error, ...rest } = decision;
  return { ...rest, error: error === undefined ? undefined : String(error) };
}

/** The generators build every rule with core's factories; their type is the resolved shape the store sees. */
const asRules = (rules: readonly ResolvedRule[]) => rules as unknown as readonly Rule[];

/** Runs `sequence` on every store with one fresh identity and one driven clock; every decision must agree. */
async function agree(rules: readonly ResolvedRule[], start: number, sequence: readonly Event[]): Promise<void> {
  stats.sequences++;
  let now = start;
  const name = `x${run++}`;
  const limiters: Array<{ store: string; limiter: Limiter }> = stores.map(({ name: store, store: s }) => ({
    store,
    // Redis and Upstash share one redis-server: a prefix per store keeps their keys apart. A generous deadline:
    // this suite compares answers, it does not time the stores.
    limiter: createLimiter({
      store: s,
      rules: asRules(rules),
      name,
      prefix: `sluice-${store}`,
      clock: () => now,
      timeout: 5_000,
      circuitBreaker: false,
      onStoreError: 'deny',
    }),
  }));
  const history: string[] = [];
  for (const event of sequence) {
    if (event.deltaMs < 0) stats.backwardSteps++;
    now = Math.max(start - 10_000, now + event.deltaMs);
    history.push(
      `now=${now} ${event.operation}(cost ${event.cost}${event.operation === 'reserve' ? `, maxWaitMs ${event.maxWaitMs ?? 0}` : ''})`,
    );
    stats.operations[event.operation]++;
    const answers = [];
    for (const { store, limiter } of limiters) {
      const decision =
        event.operation === 'reserve'
          ? await limiter.reserve('id', { cost: event.cost, maxWait: event.maxWaitMs ?? 0 })
          : await limiter[event.operation === 'consume' ? 'limit' : event.operation]('id', { cost: event.cost });
      answers.push({ store, decision: view(decision) });
    }
    stats.decisions++;
    const [reference, ...others] = answers;
    expect(reference!.decision.degraded, `${reference!.store}: ${history.join(' → ')}`).toBe(false);
    if (event.cost === 0 || event.operation === 'refund')
      expect(reference!.decision.allowed, `${reference!.store}: ${history.join(' → ')}`).toBe(true);
    if (event.operation === 'take')
      expect(reference!.decision.granted, `${reference!.store}: ${history.join(' → ')}`).toBeGreaterThanOrEqual(0);
    if (event.operation === 'reserve')
      expect(reference!.decision.startAt, `${reference!.store}: ${history.join(' → ')}`).toEqual(expect.any(Number));
    for (const other of others) {
      expect(other.decision, `${other.store} against ${reference!.store}, rules ${JSON.stringify(rules)}: ${history.join(' → ')}`).toEqual(
        reference!.decision,
      );
    }
  }
}

const event = (deltaMs: number, operation: Event['operation'] = 'consume', cost = 1): Event => ({ deltaMs, operation, cost });

describe('every store gives the same answers for any clock sequence', () => {
  test('the reported repro: fixed window 1 per 1000 ms, 1500 limit → 2100 refund → 1900 limit → 2200 limit', async () => {
    const start = 1_700_000_001_500;
    await agree([fixedWindow({ id: 'fw', limit: 1, window: 1_000 })], start, [event(0), event(600, 'refund'), event(-200), event(300)]);
  });

  test('the reported repro: sliding window counter 1 per 10 ms, 996 limit, 1002 limit, 999 cost 0 is allowed everywhere', async () => {
    const start = 1_700_000_000_996;
    await agree([slidingWindowCounter({ id: 'swc', limit: 1, window: 10 })], start, [event(0), event(6), event(-3, 'consume', 0)]);
  });

  for (const algorithm of ALGORITHMS) {
    test(`${algorithm}: random sequences with backward steps, huge gaps, cost 0 and oversize costs`, async () => {
      await fc.assert(
        fc.asyncProperty(
          ruleOf(algorithm, 'r').chain((rule) => fc.tuple(fc.constant([rule]), startMs, events(rule.limit, 8))),
          async ([rules, start, sequence]) => agree(rules, start, sequence),
        ),
        { numRuns: 25 },
      );
    }, 120_000);
  }

  test('compound rules (all or nothing): random sequences with backward steps', async () => {
    await fc.assert(
      fc.asyncProperty(
        compoundRules.chain((rules) => fc.tuple(fc.constant(rules), startMs, events(Math.max(...rules.map((r) => r.limit)), 8))),
        async ([rules, start, sequence]) => agree(rules, start, sequence),
      ),
      { numRuns: 40 },
    );
  }, 120_000);
});
