/**
 * The deny cache (every strategy keeps one; `deny-cache` is nothing else): one instance decides exactly as the shared
 * store alone, over generated histories of every rule kind with the nasty clock moves and costs; a refusal is replayed
 * from memory until the shared store's retry time, a refund forgets it, and maxKeys bounds what is remembered.
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
} from '@sluice/core';
import { memoryStore } from '@sluice/memory';
import { TEST_MAX_KEYS, tierFixture, windowStartAfterClockStart } from './support.js';

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

describe('deny cache: one instance decides exactly as the shared store alone', () => {
  test.each(RULES)('%s', async (_name, rule) => {
    await fc.assert(
      fc.asyncProperty(fc.array(eventArb, { minLength: 1, maxLength: 60 }), async (events) => {
        const { clock, limiter } = tierFixture('deny-cache');
        const viaTier = limiter(rule());
        const alone = createLimiter({ store: memoryStore({ maxKeys: TEST_MAX_KEYS }), rules: rule(), clock: clock.read });
        let steppedBack = false;
        for (const event of events) {
          clock.now = Math.max(0, clock.now + event.move);
          if (event.move < 0) steppedBack = true;
          const call = (l: Limiter): Promise<Decision> =>
            event.peek ? l.peek('id', { cost: event.cost }) : l.limit('id', { cost: event.cost });
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
    // Starts at the start of a window.
    const { clock, shared, store, limiter } = tierFixture('deny-cache', { start: windowStartAfterClockStart(1000) });
    const limited = limiter(fixedWindow({ limit: 3, window: '1s' }));
    for (let i = 0; i < 3; i++) expect((await limited.limit('a')).allowed).toBe(true);
    const refused = await limited.limit('a');
    expect(refused).toMatchObject({ allowed: false, retryAfter: 1000 });
    const callsAfterFirstRefusal = shared.calls;
    clock.now += 400;
    for (let i = 0; i < 50; i++) expect(await limited.limit('a')).toMatchObject({ allowed: false, retryAfter: 600, degraded: false });
    expect(shared.calls).toBe(callsAfterFirstRefusal);
    expect(store.stats().denyCacheHits).toBe(50);
    clock.now += 600;
    expect((await limited.limit('a')).allowed).toBe(true);
    expect(shared.calls).toBe(callsAfterFirstRefusal + 1);
  });

  test('a refund forgets the refusal', async () => {
    const { clock, limiter } = tierFixture('deny-cache', { start: windowStartAfterClockStart(1000) });
    const limited = limiter(fixedWindow({ limit: 1, window: '1s' }));
    expect((await limited.limit('a')).allowed).toBe(true);
    expect((await limited.limit('a')).allowed).toBe(false);
    await limited.refund('a');
    clock.now += 1;
    expect((await limited.limit('a')).allowed).toBe(true);
  });
});

describe('maxKeys', () => {
  test('maxKeys bounds the deny cache: with maxKeys 3, of 1,000 refused identities only the last 3 are remembered', async () => {
    const { store, limiter } = tierFixture('deny-cache', { maxKeys: 3 });
    const limited = limiter(fixedWindow({ limit: 1, window: '1m' }));
    for (let i = 0; i < 1000; i++) {
      await limited.limit(`id-${i}`);
      expect((await limited.limit(`id-${i}`)).allowed).toBe(false); // refused by the shared store: remembered
    }
    const before = store.stats();
    for (let i = 0; i < 1000; i++) expect((await limited.limit(`id-${i}`)).allowed).toBe(false);
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
