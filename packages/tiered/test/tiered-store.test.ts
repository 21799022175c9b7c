/**
 * @sluice/tiered against an in-process shared store (a memory store behind promises, test/support.ts), with a
 * fake clock: the deny cache equals the shared store alone; fleets of tiers keep the README's bounds under
 * random interleavings; failures fall back to the local share and come back; close() returns and flushes.
 * The multi-process simulation against a real redis-server is test/fleet/tiered-fleet-simulation.test.ts (repository root).
 */
import fc from 'fast-check';
import { describe, expect, test } from 'vitest';
import {
  createLimiter,
  fixedWindow,
  gcra,
  leakyBucket,
  slidingWindowCounter,
  slidingWindowLog,
  tokenBucket,
  type Decision,
  type Limiter,
  type Rule,
  type Store,
} from '@sluice/core';
import type { LimitRequest, LimitResult } from '@sluice/core/store';
import { memoryStore } from '@sluice/memory';
import { tieredStore, type TieredStoreOptions, type TierStrategy } from '../src/index.js';
import { SharedStore, TEST_MAX_KEYS, prng } from './support.js';

const T0 = 1_700_000_000_000;

const RULES: ReadonlyArray<readonly [string, () => Rule]> = [
  ['fixed window', () => fixedWindow({ limit: 5, window: '1s' })],
  ['token bucket', () => tokenBucket({ capacity: 5, refillRate: 2, interval: '1s' })],
  ['token bucket (interval refill)', () => tokenBucket({ capacity: 5, refillRate: 2, interval: '1s', refill: 'interval' })],
  ['leaky bucket', () => leakyBucket({ capacity: 5, leakRate: 2, interval: '1s' })],
  ['gcra', () => gcra({ limit: 4, period: '1s', burst: 2 })],
  ['sliding window log', () => slidingWindowLog({ limit: 5, window: '1s' })],
  ['sliding window counter', () => slidingWindowCounter({ limit: 5, window: '1s' })],
];

/** Clock moves with the nasty cases: backward steps, zero, small, and gaps far longer than any window. */
const moveArb = fc.oneof(
  fc.integer({ min: -1500, max: -1 }),
  fc.constant(0),
  fc.integer({ min: 1, max: 400 }),
  fc.integer({ min: 5_000, max: 10_000_000 }),
);
/** Costs with zero and oversize ones (every rule above holds at most 5). */
const costArb = fc.oneof(fc.constant(1), fc.constant(1), fc.constant(0), fc.integer({ min: 2, max: 4 }), fc.integer({ min: 6, max: 50 }));
const eventArb = fc.record({ move: moveArb, cost: costArb, peek: fc.boolean() });

function tier(remote: SharedStore, strategy: TierStrategy, clock: () => number, extra: Partial<TieredStoreOptions> = {}) {
  return tieredStore({ remote, instances: 4, strategy, clock, timers: false, maxKeys: TEST_MAX_KEYS, ...extra });
}

describe('options', () => {
  const remote = new SharedStore();
  test.each([
    [{}, /remote must be a store/],
    [{ remote, instances: 0 }, /instances must be an integer from 1/],
    [{ remote, instances: 2.5 }, /instances must be an integer from 1/],
    [{ remote, instances: 2, strategy: 'lru' }, /strategy must be 'deny-cache', 'lease' or 'async'/],
    [{ remote, instances: 2, lease: { maxBatch: 0 } }, /lease.maxBatch must be an integer from 1/],
    [{ remote, instances: 2, lease: { ttl: 'soon' } }, /lease.ttl/],
    [{ remote, instances: 2, lease: { size: 3 } }, /unknown option "size"/],
    [
      { remote, instances: 2, async: { flushEvery: 10, maxUnsynced: 5 } },
      /async.maxUnsynced \(5\) must be at least async.flushEvery \(10\)/,
    ],
    [{ remote, instances: 2, timers: 'yes' }, /timers must be true or false/],
    [{ remote, instances: 2, waitUntil: 3 }, /waitUntil must be a function/],
    [{ remote, instances: 2, ttl: '1s' }, /unknown option "ttl"/],
  ])('%j is refused, naming the field', (options, message) => {
    expect(() => tieredStore(options as unknown as TieredStoreOptions)).toThrow(message);
  });

  test('lease and async need a remote store that announces take', () => {
    const noTake = {
      capabilities: { synchronous: false, clock: 'client', operations: ['limit', 'reset'] },
      limit: remote.limit.bind(remote),
      reset: remote.reset.bind(remote),
    } as const;
    expect(() => tieredStore({ remote: noTake, instances: 2, strategy: 'lease' })).toThrow(/needs a remote store that supports take/);
    expect(tieredStore({ remote: noTake, instances: 2 }).strategy).toBe('deny-cache');
  });
});

describe('deny cache: one instance decides exactly as the shared store alone', () => {
  test.each(RULES)('%s', async (_name, rule) => {
    await fc.assert(
      fc.asyncProperty(fc.array(eventArb, { minLength: 1, maxLength: 60 }), async (events) => {
        let now = T0;
        const clock = () => now;
        const shared = new SharedStore();
        const viaTier = createLimiter({ store: tier(shared, 'deny-cache', clock), rules: rule(), clock });
        const alone = createLimiter({ store: memoryStore({ maxKeys: TEST_MAX_KEYS }), rules: rule(), clock });
        let steppedBack = false;
        for (const event of events) {
          now = Math.max(0, now + event.move);
          if (event.move < 0) steppedBack = true;
          const call = (limiter: Limiter): Promise<Decision> =>
            event.peek ? limiter.peek('id', { cost: event.cost }) : limiter.limit('id', { cost: event.cost });
          const [got, want] = [await call(viaTier), await call(alone)];
          expect({ allowed: got.allowed, reason: got.reason }).toEqual({ allowed: want.allowed, reason: want.reason });
          // A replayed refusal carries the shared store's retry time. Once the clock has stepped back, GCRA's own
          // retry time drifts with the clock (its capped lead), and the replay may say sooner, never later.
          if (steppedBack) expect(got.retryAfter).toBeLessThanOrEqual(want.retryAfter);
          else expect(got.retryAfter).toBe(want.retryAfter);
        }
      }),
      { numRuns: 60 },
    );
  });

  test('a refused identity is refused locally until retryAt, then asks the shared store again', async () => {
    let now = T0;
    const clock = () => now;
    const shared = new SharedStore();
    const store = tier(shared, 'deny-cache', clock);
    const limiter = createLimiter({ store, rules: fixedWindow({ limit: 3, window: '1s' }), clock });
    now = Math.ceil(T0 / 1000) * 1000; // the start of a window
    for (let i = 0; i < 3; i++) expect((await limiter.limit('a')).allowed).toBe(true);
    const refused = await limiter.limit('a');
    expect(refused).toMatchObject({ allowed: false, retryAfter: 1000 });
    const callsAfterFirstRefusal = shared.calls;
    now += 400;
    for (let i = 0; i < 50; i++) expect(await limiter.limit('a')).toMatchObject({ allowed: false, retryAfter: 600, degraded: false });
    expect(shared.calls).toBe(callsAfterFirstRefusal);
    expect(store.stats().denyCacheHits).toBe(50);
    now += 600;
    expect((await limiter.limit('a')).allowed).toBe(true);
    expect(shared.calls).toBe(callsAfterFirstRefusal + 1);
  });

  test('a refund forgets the refusal', async () => {
    let now = Math.ceil(T0 / 1000) * 1000;
    const clock = () => now;
    const shared = new SharedStore();
    const limiter = createLimiter({ store: tier(shared, 'deny-cache', clock), rules: fixedWindow({ limit: 1, window: '1s' }), clock });
    expect((await limiter.limit('a')).allowed).toBe(true);
    expect((await limiter.limit('a')).allowed).toBe(false);
    await limiter.refund('a');
    now += 1;
    expect((await limiter.limit('a')).allowed).toBe(true);
  });
});

/**
 * A fleet of tiers over one shared store, driven by a seeded random interleaving: each step picks an instance,
 * fires a burst of concurrent decisions on a few identities (one of them hot), and moves the clock. Admissions are
 * counted per identity and per fixed window of the rule, attributed by `decision.now`.
 */
async function runFleet(strategy: TierStrategy, seed: number, options: Partial<TieredStoreOptions> = {}, limit = 20) {
  let now = Math.ceil(T0 / 1000) * 1000;
  const clock = () => now;
  const shared = new SharedStore();
  const tiers = Array.from({ length: 4 }, () => tier(shared, strategy, clock, options));
  const limiters = tiers.map((store) => createLimiter({ store, rules: fixedWindow({ limit, window: '1s' }), clock }));
  const random = prng(seed);
  const admitted = new Map<string, number>();
  let decisions = 0;
  for (let step = 0; step < 300; step++) {
    const limiter = limiters[Math.floor(random() * limiters.length)]!;
    const burst = 1 + Math.floor(random() * 12);
    const answers = await Promise.all(
      Array.from({ length: burst }, () => {
        const identity = random() < 0.7 ? 'hot' : `cold-${Math.floor(random() * 5)}`;
        return limiter.limit(identity).then((d) => [identity, d] as const);
      }),
    );
    decisions += burst;
    for (const [identity, d] of answers) {
      if (!d.allowed) continue;
      const window = `${identity}@${Math.floor(d.now / 1000)}`;
      admitted.set(window, (admitted.get(window) ?? 0) + 1);
    }
    now += Math.floor(random() * 40);
    if (random() < 0.05) await tiers[Math.floor(random() * tiers.length)]!.sync();
  }
  for (const t of tiers) await t.close();
  const stats = tiers.map((t) => t.stats());
  return { limit, admitted, decisions, remoteCalls: shared.calls, stats };
}

describe('fleets of four instances over one shared store (fixed window, limit 20 per second)', () => {
  test('deny cache and leased batches: never more than the limit in any window, for any identity', async () => {
    for (const strategy of ['deny-cache', 'lease'] as const) {
      for (let seed = 1; seed <= 12; seed++) {
        const run = await runFleet(strategy, seed);
        const worst = Math.max(...run.admitted.values());
        expect(worst, `${strategy}, seed ${seed}`).toBeLessThanOrEqual(run.limit);
        expect(run.stats.reduce((sum, s) => sum + s.overAdmittedUnits, 0)).toBe(0);
      }
    }
  });

  test('leased batches answer most decisions without a remote call', async () => {
    // Batches are a sixteenth of the limit: 4 units at a limit of 64.
    const run = await runFleet('lease', 7, {}, 64);
    const hotWindows = [...run.admitted.entries()].filter(([key]) => key.startsWith('hot@'));
    // The hot identity filled its windows, less at most the batches the 4 instances held unspent when each ended.
    expect(hotWindows.length).toBeGreaterThan(3);
    for (const [window, n] of hotWindows) expect(n, window).toBeGreaterThanOrEqual(run.limit - 4 * 4);
    expect(run.remoteCalls / run.decisions).toBeLessThan(0.25);
  });

  test('asynchronous counting: at most the limit + instances × maxUnsynced in any window', async () => {
    const maxUnsynced = 3;
    let worstOver = 0;
    for (let seed = 1; seed <= 12; seed++) {
      const run = await runFleet('async', seed, { async: { flushEvery: 2, maxUnsynced } });
      const worst = Math.max(...run.admitted.values());
      expect(worst, `seed ${seed}`).toBeLessThanOrEqual(run.limit + 4 * maxUnsynced);
      worstOver = Math.max(worstOver, worst - run.limit);
    }
    // The bound is not vacuous here: the interleavings do over-admit, by up to the bound.
    expect(worstOver).toBeGreaterThan(0);
  });
});

describe('leases', () => {
  test('one batch is fetched at a time per identity: a sixteenth of the limit, or one unit for each request waiting for it, at most maxBatch', async () => {
    const now = T0;
    const clock = () => now;
    const shared = new SharedStore();
    const limiter = createLimiter({
      store: tier(shared, 'lease', clock),
      rules: tokenBucket({ capacity: 1000, refillRate: 1, interval: '1h' }),
      clock,
    });
    const takes = () => shared.operations.filter((m) => m.startsWith('take:'));
    await limiter.limit('calm');
    // floor(1000 / 16) = 62 units a batch when one request asks.
    expect(takes()).toEqual(['take:62']);
    const burst = await Promise.all(Array.from({ length: 80 }, () => limiter.limit('hot')));
    expect(burst.every((d) => d.allowed)).toBe(true);
    // 80 requests at once: one take, sent after the others queued behind it, covers all of them (not 62, then 18).
    expect(takes()).toEqual(['take:62', 'take:80']);
    const flood = await Promise.all(Array.from({ length: 250 }, () => limiter.limit('flood')));
    expect(flood.every((d) => d.allowed)).toBe(true);
    // At most maxBatch (100) a take; the requests it could not serve wait for the next one together (the last 50
    // take a whole batch of 62).
    expect(takes()).toEqual(['take:62', 'take:80', 'take:100', 'take:100', 'take:62']);
  });

  test('a cost above 1 is decided remotely, exactly, and batches stay for the usual cost', async () => {
    const now = T0;
    const clock = () => now;
    const shared = new SharedStore();
    const limiter = createLimiter({ store: tier(shared, 'lease', clock), rules: fixedWindow({ limit: 10, window: '1s' }), clock });
    expect((await limiter.limit('a', { cost: 3 })).allowed).toBe(true);
    expect(shared.operations).toEqual(['consume:3']);
  });

  test("close() gives a bucket's unspent units back", async () => {
    const now = T0;
    const clock = () => now;
    const shared = new SharedStore();
    const store = tier(shared, 'lease', clock);
    const rule = tokenBucket({ capacity: 1600, refillRate: 1, interval: '1h' });
    const limiter = createLimiter({ store, rules: rule, clock });
    await limiter.limit('a');
    for (let i = 0; i < 10; i++) await Promise.all(Array.from({ length: 8 }, () => limiter.limit('a')));
    const held = createLimiter({ store: shared.inner, rules: rule, clock, name: 'default' });
    const before = (await held.peek('a')).remaining;
    await store.close();
    const after = (await held.peek('a')).remaining;
    expect(store.stats().returnedUnits).toBeGreaterThan(0);
    expect(after - before).toBe(store.stats().returnedUnits);
    expect(after).toBe(1600 - 81); // 81 spent; the rest is back
  });

  test("a fixed window's unspent units are never refunded (a refund run after the window ended would lower the next window's count): they lapse", async () => {
    let now = Math.ceil(T0 / 1000) * 1000;
    const clock = () => now;
    const shared = new SharedStore();
    const store = tier(shared, 'lease', clock);
    const limiter = createLimiter({ store, rules: fixedWindow({ limit: 100, window: '1s' }), clock });
    // A batch of 6 (100 / 16), 2 of them spent: 4 unspent when the window ends.
    await limiter.limit('b');
    await limiter.limit('b');
    now += 500;
    await store.sync();
    await store.close();
    expect(store.stats().returnedUnits).toBe(0);
    expect(store.stats().lapsedUnits).toBe(4);
    expect(shared.operations.some((m) => m.startsWith('refund'))).toBe(false);
  });

  test('a leased unit is spent only before its window ends, counted from when the take was sent (a slow take shortens the lease, never lengthens it)', async () => {
    let now = Math.ceil(T0 / 1000) * 1000 + 900;
    const clock = () => now;
    const inner = memoryStore();
    // The take runs 60 ms after it was sent (a queue in front of the store): the store sees 100 - 40 ms left.
    const remote: Store = {
      capabilities: { synchronous: false, clock: 'store', operations: ['limit', 'reset', 'take', 'reserve'] },
      limit: (request) => Promise.resolve(inner.limit({ ...request, now: now + 60 })),
      reset: (key, ids) => inner.reset(key, ids),
    };
    const store = tieredStore({ remote, instances: 1, strategy: 'lease', timers: false, clock });
    const limiter = createLimiter({ store, rules: fixedWindow({ limit: 1600, window: '1s' }), clock });
    expect((await limiter.limit('a')).allowed).toBe(true);
    now += 39; // 40 ms after the take was sent: the window has at most 1 ms left, the lease is still spendable
    expect((await limiter.limit('a')).allowed).toBe(true);
    const local = store.stats().local;
    now += 1; // 40 ms after the send: past what the store said was left, spent no more
    await limiter.limit('a');
    expect(store.stats().local).toBe(local);
    expect(store.stats().lapsedUnits).toBeGreaterThan(0);
  });
});

describe('a remote store on its own clock', () => {
  test('a leased unit is never answered with a time before the take that counted it, whatever other identities did to the clock offset', async () => {
    // The remote store decides at its own time (a store clock), which leads or lags the local one per call.
    const inner = memoryStore();
    let remoteNow = 0;
    const remote: Store = {
      capabilities: { synchronous: false, clock: 'store', operations: ['limit', 'reset', 'take', 'reserve'] },
      limit: (request) => Promise.resolve(inner.limit({ ...request, now: remoteNow })),
      reset: (key, ids) => inner.reset(key, ids),
    };
    const local = 1_000_000_000;
    const store = tieredStore({ remote, instances: 1, strategy: 'lease', timers: false, clock: () => local });
    const limiter = createLimiter({ store, rules: fixedWindow({ limit: 1600, window: '1s' }), clock: () => local });
    remoteNow = local + 10; // a new window on the remote clock: 1,000,000,010
    await limiter.limit('a');
    await Promise.all(Array.from({ length: 8 }, () => limiter.limit('a'))); // a batch for 'a', taken at +10
    remoteNow = local - 2; // another identity's answer moves the offset back, into the previous window
    await limiter.limit('b');
    const spent = await Promise.all(Array.from({ length: 5 }, () => limiter.limit('a')));
    expect(store.stats().local).toBeGreaterThan(0);
    for (const d of spent) {
      expect(d.allowed).toBe(true);
      expect(d.now).toBeGreaterThanOrEqual(local + 10);
    }
  });
});

describe('a process that dies holding a lease', () => {
  test('loses at most that lease: its window ends, and the next one has the whole limit', async () => {
    let now = Math.ceil(T0 / 1000) * 1000;
    const clock = () => now;
    const shared = new SharedStore();
    const rule = fixedWindow({ limit: 50, window: '1s' });
    const dying = createLimiter({ store: tier(shared, 'lease', clock), rules: rule, clock });
    // A batch of 3 (50 / 16), 1 spent: it dies holding 2.
    await dying.limit('a');
    // Never closed: its unspent units stay counted in this window. Another instance gets only what is left.
    const other = createLimiter({ store: tier(shared, 'lease', clock), rules: rule, clock });
    let admitted = 0;
    for (let i = 0; i < 60; i++) if ((await other.limit('a')).allowed) admitted++;
    expect(admitted).toBe(50 - 3);
    now += 1000;
    let next = 0;
    for (let i = 0; i < 60; i++) if ((await other.limit('a')).allowed) next++;
    expect(next).toBe(50);
  });
});

describe('asynchronous counting', () => {
  test('counts reach the shared store: by flushes, and all of them on close()', async () => {
    const now = T0;
    const clock = () => now;
    const shared = new SharedStore();
    const store = tier(shared, 'async', clock, { async: { flushEvery: 5 } });
    const rule = fixedWindow({ limit: 1000, window: '1m' });
    const limiter = createLimiter({ store, rules: rule, clock });
    for (let i = 0; i < 37; i++) expect((await limiter.limit('a')).allowed).toBe(true);
    await store.close();
    const held = createLimiter({ store: shared.inner, rules: rule, clock });
    expect((await held.peek('a')).remaining).toBe(1000 - 37);
    expect(store.stats().local).toBeGreaterThan(20);
  });
});

describe('maxKeys', () => {
  test('maxKeys bounds the deny cache: with maxKeys 3, of 1,000 refused identities only the last 3 are remembered', async () => {
    const now = T0;
    const clock = () => now;
    const shared = new SharedStore();
    const store = tier(shared, 'deny-cache', clock, { maxKeys: 3 });
    const limiter = createLimiter({ store, rules: fixedWindow({ limit: 1, window: '1m' }), clock });
    for (let i = 0; i < 1000; i++) {
      await limiter.limit(`id-${i}`);
      expect((await limiter.limit(`id-${i}`)).allowed).toBe(false); // refused by the shared store: remembered
    }
    const before = store.stats();
    for (let i = 0; i < 1000; i++) expect((await limiter.limit(`id-${i}`)).allowed).toBe(false);
    const after = store.stats();
    // Only the last 3 refusals were held, and reading in order evicts each before its turn: none is replayed from
    // memory, every one asks the shared store again.
    expect(after.denyCacheHits - before.denyCacheHits).toBeLessThanOrEqual(3);
    expect(after.remoteCalls - before.remoteCalls).toBeGreaterThanOrEqual(997);
    // Held entries, read where the tier keeps them: never more than maxKeys.
    expect((store as unknown as { entries: { size: number } }).entries.size).toBeLessThanOrEqual(3);
    await store.close();
  });
});

describe('failures', () => {
  test('the remote store down: refused in the window the outage began in, the local share from the next, the shared state after the window it ended in', async () => {
    for (const strategy of ['deny-cache', 'lease', 'async'] as const) {
      let now = Math.ceil(T0 / 60_000) * 60_000;
      const clock = () => now;
      const shared = new SharedStore();
      const store = tier(shared, strategy, clock);
      const limiter = createLimiter({ store, rules: fixedWindow({ limit: 40, window: '1m' }), clock });
      expect((await limiter.limit('warm')).degraded).toBe(false);
      shared.failing = true;
      // The window the outage began in: the shared store may have admitted its whole limit already.
      const first: Decision[] = [];
      for (let i = 0; i < 10; i++) first.push(await limiter.limit(`down-${strategy}`));
      expect(first.every((d) => !d.allowed && d.degraded)).toBe(true);
      expect(first[0]!.error).toMatchObject({ code: 'STORE_ERROR' });
      expect(first[0]!.resetAt).toBe(now + 60_000);
      now += 60_000;
      const during: Decision[] = [];
      for (let i = 0; i < 30; i++) during.push(await limiter.limit(`down-${strategy}`));
      // limit 40 ÷ 4 instances: this instance admits 10 on its own.
      expect(during.filter((d) => d.allowed)).toHaveLength(10);
      expect(during.every((d) => d.degraded)).toBe(true);
      expect(during[29]!.error).toMatchObject({ code: 'CIRCUIT_OPEN' });
      shared.failing = false;
      now += 600; // past the 500 ms cooldown: the store answers again, and the share finishes this window
      await limiter.limit(`probe-${strategy}`);
      expect(await limiter.limit(`down-${strategy}`)).toMatchObject({ allowed: false, degraded: true });
      now += 60_000;
      expect(await limiter.limit(`down-${strategy}`)).toMatchObject({ allowed: true, degraded: false });
      await store.close();
    }
  });

  test('after an outage, the share finishes the window even when calls waited on a batch taken while it did, and a second short outage does not cut it short', async () => {
    let now = Math.ceil(T0 / 60_000) * 60_000;
    const clock = () => now;
    const shared = new SharedStore();
    const store = tier(shared, 'lease', clock);
    const limiter = createLimiter({ store, rules: fixedWindow({ limit: 400, window: '1m' }), clock });
    expect((await limiter.limit('warm')).degraded).toBe(false);
    shared.failing = true;
    for (let i = 0; i < 5; i++) await limiter.limit('down');
    now += 60_000; // the outage goes on into the next window: the shares answer it
    expect(await limiter.limit('down')).toMatchObject({ allowed: true, degraded: true });
    shared.failing = false;
    now += 600; // past the breaker's cooldown: the store answers again
    // Calls in flight together for one identity: one takes a batch, the others wait for it. The batch is taken while
    // the share finishes the window, so every one of them is answered on the share; none may read that as a new outage.
    const together = await Promise.all(Array.from({ length: 8 }, () => limiter.limit('burst')));
    // Answered on the share (limit 400 ÷ 4 instances): all 8 admitted, none refused as if the store had gone down again.
    expect(together.map((d) => [d.allowed, d.degraded])).toEqual(Array.from({ length: 8 }, () => [true, true]));
    // Another identity, later in the same window: the store answers, but the other instances may still be on their
    // shares (the store may have restarted empty), so the share still decides.
    now += 1000;
    expect(await limiter.limit('later')).toMatchObject({ degraded: true });
    // A short second outage inside the window being finished, seen by calls that reach the store meanwhile (a bucket
    // has no window to finish), and the store back again: the first outage's window is still finished on the share.
    const bucket = createLimiter({ store, rules: tokenBucket({ capacity: 100, refillRate: 1, interval: '1s' }), clock });
    shared.failing = true;
    for (let i = 0; i < 4; i++) expect((await bucket.limit('blip')).degraded).toBe(true);
    shared.failing = false;
    now += 600;
    expect(await bucket.limit('blip')).toMatchObject({ degraded: false });
    expect(await limiter.limit('after-blip')).toMatchObject({ degraded: true });
    now = Math.ceil(now / 60_000) * 60_000 + 60_000; // the window after the next: the shared state again
    expect(await limiter.limit('after-blip')).toMatchObject({ allowed: true, degraded: false });
    await store.close();
  });

  test('a bucket has no window to guard: the local share answers it from the first connection error', async () => {
    const now = T0;
    const clock = () => now;
    const shared = new SharedStore();
    const limiter = createLimiter({
      store: tier(shared, 'deny-cache', clock),
      rules: tokenBucket({ capacity: 8, refillRate: 1, interval: '1h' }),
      clock,
    });
    shared.failing = true;
    const during: Decision[] = [];
    for (let i = 0; i < 4; i++) during.push(await limiter.limit('b'));
    // capacity 8 ÷ 4 instances: this instance admits 2 on its own, every answer degraded, the first one already.
    expect(during.map((d) => d.allowed)).toEqual([true, true, false, false]);
    expect(during.every((d) => d.degraded)).toBe(true);
    expect(during[0]!.error).toMatchObject({ code: 'STORE_ERROR' });
  });

  test('a timeout is not an outage: a remote store that answers too late is refused, never answered on the local share; one that errors is', async () => {
    /** The shared store, answering each call 200 ms late (real time): past the tier's 20 ms timeout. */
    class LateStore extends SharedStore {
      override limit(request: LimitRequest): Promise<LimitResult> {
        const answer = super.limit(request);
        // This package's tests see no Node or DOM types (edge safety): the runtime's timer, typed here.
        const timers = globalThis as unknown as { setTimeout(callback: () => void, ms: number): unknown };
        return new Promise((resolve) => timers.setTimeout(() => resolve(answer), 200));
      }
    }
    let now = Math.ceil(T0 / 60_000) * 60_000;
    const clock = () => now;
    const options = { timeout: '20ms', circuitBreaker: false } as const;
    const late = createLimiter({
      store: tier(new LateStore(), 'deny-cache', clock, options),
      rules: [tokenBucket({ capacity: 8, refillRate: 1, interval: '1h' })],
      clock,
    });
    const failing = new SharedStore();
    failing.failing = true;
    const erroring = createLimiter({
      store: tier(failing, 'deny-cache', clock, options),
      rules: [tokenBucket({ capacity: 8, refillRate: 1, interval: '1h' })],
      clock,
    });
    const slow: Decision[] = [];
    const down: Decision[] = [];
    for (let i = 0; i < 4; i++) {
      slow.push(await late.limit('b'));
      expect(slow[i], `call ${i} to the late store`).toMatchObject({ allowed: false, degraded: true });
      down.push(await erroring.limit('b'));
    }
    // The connection error: the share (capacity 8 ÷ 4 instances) admits 2. The timeout: refused, every one.
    expect(down.map((d) => d.allowed)).toEqual([true, true, false, false]);
    expect(slow.map((d) => d.allowed)).toEqual([false, false, false, false]);
    for (const d of slow) expect(d).toMatchObject({ degraded: true, error: { code: 'STORE_TIMEOUT' } });

    // A fixed window: timeouts in the window before do not open the next one to the share either.
    const windowed = createLimiter({
      store: tier(new LateStore(), 'deny-cache', clock, options),
      rules: fixedWindow({ limit: 40, window: '1m' }),
      clock,
    });
    expect(await windowed.limit('w')).toMatchObject({ allowed: false, degraded: true });
    now += 60_000;
    const next: Decision[] = [];
    for (let i = 0; i < 3; i++) next.push(await windowed.limit('w'));
    expect(next.map((d) => d.allowed)).toEqual([false, false, false]);
    for (const d of next) expect(d).toMatchObject({ degraded: true, error: { code: 'STORE_TIMEOUT' } });
  });

  test('a rejected background flush or lease return never surfaces as an unhandled rejection, and the counts are kept', async () => {
    let now = T0;
    const clock = () => now;
    const shared = new SharedStore();
    const store = tier(shared, 'async', clock, { async: { flushEvery: 1 } });
    const limiter = createLimiter({ store, rules: fixedWindow({ limit: 1000, window: '1m' }), clock });
    await limiter.limit('a');
    shared.failing = true;
    await limiter.limit('a');
    await limiter.limit('a');
    await store.sync();
    shared.failing = false;
    now += 600;
    await store.close();
    const held = createLimiter({ store: shared.inner, rules: fixedWindow({ limit: 1000, window: '1m' }), clock });
    expect((await held.peek('a')).remaining).toBe(997);
  });
});
