/**
 * The `lease` strategy: batches taken from the shared store (one take at a time per identity, sized by the limit and
 * the requests waiting), spent from memory only while the window that counted them is open, given back by close()
 * where no fixed window dates them and left to lapse where one does; a remote store on its own clock, and a process
 * that dies holding a lease.
 */
import { describe, expect, test } from 'vitest';
import { createLimiter, fixedWindow, tokenBucket, type Store } from '@sluice/core';
import { memoryStore } from '@sluice/memory';
import { tieredStore } from '../src/index.js';
import { TestClock, tier, tierFixture, windowStartAfterClockStart } from './support.js';

/** A remote store that decides at its own time (a store clock): a memory store told `remoteNow()` on every call. */
function onItsOwnClock(remoteNow: () => number): Store {
  const inner = memoryStore();
  return {
    capabilities: { synchronous: false, clock: 'store', operations: ['limit', 'reset', 'take', 'reserve'] },
    limit: (request) => Promise.resolve(inner.limit({ ...request, now: remoteNow() })),
    reset: (key, ids) => inner.reset(key, ids),
  };
}

describe('leases', () => {
  test('one batch is fetched at a time per identity: a sixteenth of the limit, or one unit for each request waiting for it, at most maxBatch', async () => {
    const { shared, limiter } = tierFixture('lease');
    const limited = limiter(tokenBucket({ capacity: 1000, refillRate: 1, interval: '1h' }));
    const takes = () => shared.operations.filter((m) => m.startsWith('take:'));
    await limited.limit('calm');
    // floor(1000 / 16) = 62 units a batch when one request asks.
    expect(takes()).toEqual(['take:62']);
    const burst = await Promise.all(Array.from({ length: 80 }, () => limited.limit('hot')));
    expect(burst.every((d) => d.allowed)).toBe(true);
    // 80 requests at once: one take, sent after the others queued behind it, covers all of them (not 62, then 18).
    expect(takes()).toEqual(['take:62', 'take:80']);
    const flood = await Promise.all(Array.from({ length: 250 }, () => limited.limit('flood')));
    expect(flood.every((d) => d.allowed)).toBe(true);
    // At most maxBatch (100) a take; the requests it could not serve wait for the next one together (the last 50
    // take a whole batch of 62).
    expect(takes()).toEqual(['take:62', 'take:80', 'take:100', 'take:100', 'take:62']);
  });

  test('a cost above 1 is decided remotely, exactly, and batches stay for the usual cost', async () => {
    const { shared, limiter } = tierFixture('lease');
    expect((await limiter(fixedWindow({ limit: 10, window: '1s' })).limit('a', { cost: 3 })).allowed).toBe(true);
    expect(shared.operations).toEqual(['consume:3']);
  });

  test("close() gives a bucket's unspent units back", async () => {
    const { store, limiter, direct } = tierFixture('lease');
    const rule = tokenBucket({ capacity: 1600, refillRate: 1, interval: '1h' });
    const limited = limiter(rule);
    await limited.limit('a');
    for (let i = 0; i < 10; i++) await Promise.all(Array.from({ length: 8 }, () => limited.limit('a')));
    const held = direct(rule);
    const before = (await held.peek('a')).remaining;
    await store.close();
    const after = (await held.peek('a')).remaining;
    expect(store.stats().returnedUnits).toBeGreaterThan(0);
    expect(after - before).toBe(store.stats().returnedUnits);
    expect(after).toBe(1600 - 81); // 81 spent; the rest is back
  });

  test("a fixed window's unspent units are never refunded (a refund run after the window ended would lower the next window's count): they lapse", async () => {
    const { clock, shared, store, limiter } = tierFixture('lease', { start: windowStartAfterClockStart(1000) });
    const limited = limiter(fixedWindow({ limit: 100, window: '1s' }));
    // A batch of 6 (100 / 16), 2 of them spent: 4 unspent when the window ends.
    await limited.limit('b');
    await limited.limit('b');
    clock.now += 500;
    await store.sync();
    await store.close();
    expect(store.stats().returnedUnits).toBe(0);
    expect(store.stats().lapsedUnits).toBe(4);
    expect(shared.operations.some((m) => m.startsWith('refund'))).toBe(false);
  });

  test('a leased unit is spent only before its window ends, counted from when the take was sent (a slow take shortens the lease, never lengthens it)', async () => {
    const clock = new TestClock(windowStartAfterClockStart(1000) + 900);
    // The take runs 60 ms after it was sent (a queue in front of the store): the store sees 100 - 40 ms left.
    const remote = onItsOwnClock(() => clock.now + 60);
    const store = tieredStore({ remote, instances: 1, strategy: 'lease', timers: false, clock: clock.read });
    const limiter = createLimiter({ store, rules: fixedWindow({ limit: 1600, window: '1s' }), clock: clock.read });
    expect((await limiter.limit('a')).allowed).toBe(true);
    clock.now += 39; // 40 ms after the take was sent: the window has at most 1 ms left, the lease is still spendable
    expect((await limiter.limit('a')).allowed).toBe(true);
    const local = store.stats().local;
    clock.now += 1; // 40 ms after the send: past what the store said was left, spent no more
    await limiter.limit('a');
    expect(store.stats().local).toBe(local);
    expect(store.stats().lapsedUnits).toBeGreaterThan(0);
  });
});

describe('a remote store on its own clock', () => {
  test('a leased unit is never answered with a time before the take that counted it, whatever other identities did to the clock offset', async () => {
    // The remote store decides at its own time (a store clock), which leads or lags the local one per call.
    let remoteNow = 0;
    const remote = onItsOwnClock(() => remoteNow);
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
    const { clock, shared, limiter } = tierFixture('lease', { start: windowStartAfterClockStart(1000) });
    const rule = fixedWindow({ limit: 50, window: '1s' });
    const dying = limiter(rule);
    // A batch of 3 (50 / 16), 1 spent: it dies holding 2.
    await dying.limit('a');
    // Never closed: its unspent units stay counted in this window. Another instance gets only what is left.
    const other = createLimiter({ store: tier(shared, 'lease', clock.read), rules: rule, clock: clock.read });
    let admitted = 0;
    for (let i = 0; i < 60; i++) if ((await other.limit('a')).allowed) admitted++;
    expect(admitted).toBe(50 - 3);
    clock.now += 1000;
    let next = 0;
    for (let i = 0; i < 60; i++) if ((await other.limit('a')).allowed) next++;
    expect(next).toBe(50);
  });
});
