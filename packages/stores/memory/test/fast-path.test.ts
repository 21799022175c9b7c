import {
  createLimiter,
  fixedWindow,
  gcra,
  leakyBucket,
  slidingWindowCounter,
  slidingWindowLog,
  tokenBucket,
  type Decision,
  type Rule,
  type SyncStore,
} from '@sluice/core';
import type { LimitRequest } from '@sluice/core/store';
import { referenceStore } from '@sluice/conformance';
import { describe, expect, it } from 'vitest';
import { memoryStore } from '../src/index.js';

const CLOCK_START = Date.UTC(2030, 0, 1);

/** A store seen without any `limitOne`: the limiter then takes the general `limit(request)` path. */
function generalOnly(store: SyncStore): SyncStore {
  return {
    capabilities: store.capabilities,
    limit: (request: LimitRequest) => store.limit(request),
    reset: (key: string, ruleIds: readonly string[]) => store.reset(key, ruleIds),
  };
}

/** mulberry32: a seeded, reproducible sequence. */
function prng(seed: number): () => number {
  let a = seed;
  return () => {
    a = (a + 0x6d2b79f5) | 0;
    let t = Math.imul(a ^ (a >>> 15), 1 | a);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const RULES: Array<[string, () => Rule]> = [
  ['token bucket, smooth', () => tokenBucket({ capacity: 5, refillRate: 2, interval: '1s' })],
  ['token bucket, interval', () => tokenBucket({ capacity: 5, refillRate: 2, interval: '1s', refill: 'interval' })],
  ['fixed window', () => fixedWindow({ limit: 5, window: '1s' })],
  ['fixed window, staggered', () => fixedWindow({ limit: 5, window: '1s', stagger: true })],
  ['sliding window log', () => slidingWindowLog({ limit: 5, window: '1s' })],
  ['sliding window counter', () => slidingWindowCounter({ limit: 5, window: '1s' })],
  ['leaky bucket', () => leakyBucket({ capacity: 5, leakRate: 2, interval: '1s' })],
  ['gcra', () => gcra({ limit: 5, period: '1s' })],
];

describe('memoryStore: the single-rule fast path (limitOne) answers exactly like the reference model', () => {
  it.each(RULES)('%s: 2,000 random limit/peek/refund/reset calls give equal decisions', (_name, make) => {
    const random = prng(0x51ce);
    const clock = { now: CLOCK_START };
    const fastStore = memoryStore();
    const fast = createLimiter({ store: fastStore, rules: make(), clock: () => clock.now });
    // The conformance model runs core's `evaluate` over a plain Map, through the general `limit(request)` path.
    const general = createLimiter({ store: generalOnly(referenceStore()), rules: make(), clock: () => clock.now });
    expect(typeof fastStore.bindFastPath).toBe('function');
    for (let i = 0; i < 2_000; i++) {
      clock.now += Math.floor(random() * 400);
      const identity = `id-${Math.floor(random() * 12)}`;
      const cost = Math.floor(random() * 7);
      const pick = random();
      const call = (limiter: typeof fast): Decision =>
        pick < 0.7
          ? limiter.limitSync(identity, { cost })
          : pick < 0.85
            ? limiter.peekSync(identity, { cost })
            : limiter.refundSync(identity, { cost });
      const a = call(fast);
      const b = call(general);
      expect(a, `call ${i}`).toStrictEqual(b);
      if (random() < 0.01) {
        fast.reset(identity);
        general.reset(identity);
      }
    }
  });

  it('limit() takes the same path and gives the same decision as limitSync()', async () => {
    const clock = { now: CLOCK_START };
    const a = createLimiter({ store: memoryStore(), rules: tokenBucket({ capacity: 3, refillRate: 1 }), clock: () => clock.now });
    const b = createLimiter({
      store: generalOnly(referenceStore()),
      rules: tokenBucket({ capacity: 3, refillRate: 1 }),
      clock: () => clock.now,
    });
    for (let i = 0; i < 6; i++) {
      clock.now += 100;
      expect(await a.limit('x')).toStrictEqual(b.limitSync('x'));
    }
  });
});

describe('memoryStore: the fast path finds identities through an index that follows the cache', () => {
  const rule = (): Rule => tokenBucket({ capacity: 5, refillRate: 2, interval: '1s' });
  const both = (): Rule[] => [
    tokenBucket({ capacity: 5, refillRate: 2, interval: '1s' }),
    fixedWindow({ limit: 7, window: '3s', id: 'w' }),
  ];
  const identities = ['a', 'b', '}lead', 'x'.repeat(128), 'y'.repeat(129), 'z'.repeat(15_000), '\uD800lone', 'ü'];

  it.each([
    ['room for every identity', 100],
    ['4 keys: identities are evicted and come back', 4],
  ])('%s: a single-rule and a compound limiter under one name, with resets, decide as on a store without the seam', (_name, maxKeys) => {
    const random = prng(0x1dea);
    const clock = { now: CLOCK_START };
    const store = memoryStore({ maxKeys });
    const reference = generalOnly(memoryStore({ maxKeys }));
    const make = (s: SyncStore) => ({
      one: createLimiter({ store: s, rules: rule(), name: 'shared', clock: () => clock.now }),
      two: createLimiter({ store: s, rules: both(), name: 'shared', clock: () => clock.now }),
    });
    const fast = make(store);
    const general = make(reference);
    for (let i = 0; i < 4_000; i++) {
      clock.now += Math.floor(random() * 300);
      const identity = identities[Math.floor(random() * identities.length)]!;
      const cost = Math.floor(random() * 4);
      const pick = random();
      const run = (pair: typeof fast): Decision =>
        pick < 0.5
          ? pair.one.limitSync(identity, { cost })
          : pick < 0.6
            ? pair.one.refundSync(identity, { cost })
            : pick < 0.9
              ? pair.two.limitSync(identity, { cost })
              : pair.two.refundSync(identity, { cost });
      expect(run(fast), `call ${i}`).toStrictEqual(run(general));
      if (random() < 0.03) {
        void fast.two.reset(identity);
        void general.two.reset(identity);
      }
      expect(store.size).toBeLessThanOrEqual(maxKeys);
    }
    // The index holds only what the cache holds, and no identity longer than the verbatim bound.
    const indexes = (store as unknown as { indexes: Map<string, Map<string, unknown>> }).indexes;
    const indexed = [...indexes.values()].flatMap((index) => [...index.keys()]);
    expect(indexed.length).toBeGreaterThan(0);
    expect(indexed.length).toBeLessThanOrEqual(store.size);
    expect(indexed.every((identity) => identity.length <= 128)).toBe(true);
  });

  it('an identity evicted from the cache is forgotten by the index: it starts again from a full bucket', () => {
    const clock = { now: CLOCK_START };
    const store = memoryStore({ maxKeys: 2 });
    const limiter = createLimiter({ store, rules: tokenBucket({ capacity: 2, refillRate: 1, interval: '1h' }), clock: () => clock.now });
    expect(limiter.limitSync('a', { cost: 2 }).remaining).toBe(0);
    expect(limiter.limitSync('a').allowed).toBe(false);
    limiter.limitSync('b');
    limiter.limitSync('c'); // evicts 'a'
    expect(store.keys()).not.toContain('sluice:default:{a}');
    expect(limiter.limitSync('a').remaining).toBe(1);
  });
});
