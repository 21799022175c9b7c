/**
 * The tier's memory path (core's MemoryFirstStore seam: single-rule consume, peek and refund found by identity, an
 * answer from memory written into a reused object) decides exactly as its general path (`limit(request)`): over
 * generated histories of every rule kind and strategy, with backward clock steps, huge gaps, cost 0, oversize costs,
 * requests at once, several identities (one too long to be kept verbatim in its key, so never indexed), a remote
 * store on a skewed clock of its own, and rules changed by configure(), two limiters over two tiers, one with the
 * seam and one without, give the same decisions, the same tier counters and the same remote calls.
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
import type { LimitRequest, LimitResult, StoreCapabilities } from '@sluice/core/store';
import { tieredStore, type TieredStore, type TierStrategy } from '../src/index.js';
import { SharedStore, TEST_MAX_KEYS } from './support.js';

const CLOCK_START = 1_700_000_000_000;

const RULES: ReadonlyArray<readonly [string, () => Rule]> = [
  ['fixed window', () => fixedWindow({ limit: 5, window: '1s' })],
  ['token bucket', () => tokenBucket({ capacity: 5, refillRate: 2, interval: '1s' })],
  ['token bucket (interval refill)', () => tokenBucket({ capacity: 5, refillRate: 2, interval: '1s', refill: 'interval' })],
  ['leaky bucket', () => leakyBucket({ capacity: 5, leakRate: 2, interval: '1s' })],
  ['gcra', () => gcra({ limit: 4, period: '1s', burst: 2 })],
  ['sliding window log', () => slidingWindowLog({ limit: 5, window: '1s' })],
  ['sliding window counter', () => slidingWindowCounter({ limit: 5, window: '1s' })],
  // Limits large enough for batches of several units (a sixteenth of the limit), spent from memory.
  ['fixed window of 64', () => fixedWindow({ limit: 64, window: '1s' })],
  ['token bucket of 64', () => tokenBucket({ capacity: 64, refillRate: 20, interval: '1s' })],
];
const STRATEGIES: readonly TierStrategy[] = ['deny-cache', 'lease', 'async'];
const IDENTITIES = ['a', 'b', 'x'.repeat(300)];

const moveArb = fc.oneof(
  fc.integer({ min: -1500, max: -1 }),
  fc.constant(0),
  fc.integer({ min: 1, max: 400 }),
  fc.integer({ min: 5_000, max: 10_000_000 }),
);
const costArb = fc.oneof(
  fc.constant(1),
  fc.constant(1),
  fc.constant(1),
  fc.constant(0),
  fc.integer({ min: 2, max: 4 }),
  fc.integer({ min: 6, max: 50 }),
);
const eventArb = fc.record({
  move: moveArb,
  cost: costArb,
  operation: fc.constantFrom('limit', 'limit', 'limit', 'peek', 'refund'),
  identity: fc.integer({ min: 0, max: IDENTITIES.length - 1 }),
  /** Requests made at once (1: one awaited call). */
  together: fc.constantFrom(1, 1, 1, 3),
  /** Whether the limiter's rules are replaced by an equal set first (a new array, the same signature). */
  reconfigure: fc.boolean(),
});

/** The shared store on a clock of its own: it decides at the caller's time plus `skewMs`. */
class SkewedStore implements Store {
  readonly capabilities: StoreCapabilities = { synchronous: false, clock: 'store', operations: ['limit', 'reset', 'take', 'reserve'] };
  constructor(
    readonly shared: SharedStore,
    private readonly skewMs: number,
  ) {}

  limit(request: LimitRequest): Promise<LimitResult> {
    return this.shared.limit({ ...request, now: Math.max(0, request.now + this.skewMs) });
  }

  reset(key: string, ruleIds: readonly string[]): Promise<void> {
    return this.shared.reset(key, ruleIds);
  }
}

/** The same tier seen without the seam: the limiter then calls `limit(request)` for every request. */
function withoutSeam(store: TieredStore): Store {
  return { capabilities: store.capabilities, limit: (request) => store.limit(request), reset: (key, ids) => store.reset(key, ids) };
}

describe('the memory path decides as the general path', () => {
  for (const strategy of STRATEGIES) {
    test.each(RULES)(`${strategy}: %s`, async (_name, rule) => {
      await fc.assert(
        fc.asyncProperty(fc.array(eventArb, { minLength: 1, maxLength: 50 }), fc.constantFrom(0, 0, 37, -1200), async (events, skewMs) => {
          let now = CLOCK_START;
          const clock = () => now;
          const make = () => {
            const shared = new SharedStore();
            const remote = skewMs === 0 ? shared : new SkewedStore(shared, skewMs);
            const store = tieredStore({ remote, instances: 4, strategy, clock, timers: false, maxKeys: TEST_MAX_KEYS });
            return { shared, store };
          };
          const fast = make();
          const general = make();
          const limiters: [Limiter, Limiter] = [
            createLimiter({ store: fast.store, rules: rule(), clock }),
            createLimiter({ store: withoutSeam(general.store), rules: rule(), clock }),
          ];
          for (const event of events) {
            now = Math.max(0, now + event.move);
            if (event.reconfigure) for (const limiter of limiters) limiter.configure({ rules: [...limiter.rules] });
            const identity = IDENTITIES[event.identity]!;
            const call = (limiter: Limiter): Promise<Decision> =>
              event.operation === 'peek'
                ? limiter.peek(identity, { cost: event.cost })
                : event.operation === 'refund'
                  ? limiter.refund(identity, { cost: event.cost })
                  : event.cost === 1
                    ? limiter.limit(identity) // the limiter's shortcut for limit() without options
                    : limiter.limit(identity, { cost: event.cost });
            const run = (limiter: Limiter) => Promise.all(Array.from({ length: event.together }, () => call(limiter)));
            const [got, want] = await Promise.all([run(limiters[0]), run(limiters[1])]);
            expect(got).toStrictEqual(want);
            expect(fast.store.stats()).toEqual(general.store.stats());
            expect(fast.shared.operations).toEqual(general.shared.operations);
          }
          await Promise.all([fast.store.close(), general.store.close()]);
          expect(fast.shared.operations).toEqual(general.shared.operations);
        }),
        { numRuns: 40 },
      );
    });
  }
});

describe('the memory path is taken', () => {
  test('an answer from a lease skips the key and the result; an identity the LRU let go leaves the index and is found by key again', async () => {
    const now = Math.ceil(CLOCK_START / 1000) * 1000;
    const clock = () => now;
    const shared = new SharedStore();
    const store = tieredStore({ remote: shared, instances: 4, strategy: 'lease', clock, timers: false, maxKeys: 2 });
    const limiter = createLimiter({ store, rules: fixedWindow({ limit: 1600, window: '1s' }), clock });
    const bound = store.bindMemoryPath('sluice:default:{');
    const request = (identity: string) => {
      let keyRead = false;
      return {
        identity,
        rules: limiter.rules as LimitRequest['rules'],
        cost: 1,
        operation: 'consume' as const,
        now,
        get key() {
          keyRead = true;
          return `sluice:default:{${identity}}`;
        },
        keyRead: () => keyRead,
      };
    };
    const out = { allowed: false, remaining: 0, resetAt: 0, retryAt: 0, now: 0 };
    await limiter.limit('a'); // takes a batch of 100 for 'a'
    const first = request('a');
    // 'a' was indexed by the limiter's own path (the same prefix): answered from its lease, into `out`, key unread.
    expect(bound.limitOne(first, out)).toBeUndefined();
    expect(first.keyRead()).toBe(false);
    expect(out).toMatchObject({ allowed: true, remaining: 1600 - 2, now });
    // Two other identities evict 'a' (maxKeys 2): its index entry goes with it, so it is looked up by key again.
    await limiter.limit('b');
    await limiter.limit('c');
    const again = request('a');
    const fetched = bound.limitOne(again, out);
    expect(fetched).toBeInstanceOf(Promise);
    expect(again.keyRead()).toBe(true);
    expect(await fetched).toMatchObject({ outcomes: [{ allowed: true }] });
    await store.close();
  });
});
