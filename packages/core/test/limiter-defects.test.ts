/**
 * Regression tests for limiter defects (an unchecked clock, a double count through an asynchronous fallback, shadow
 * mode refusing, messages naming the wrong method), each named after the defect it pins. They drive the limiter with
 * the test MapStore (core's `evaluate` over a Map) and with stores that fail, all in-process.
 */
import { describe, expect, test } from 'vitest';
import { createLimiter, gcra, isSluiceError, leakyBucket, slidingWindowLog, tokenBucket, type Rule, type Store } from '../src/index.js';
import type { LimitResult } from '../src/store/index.js';
import { AsyncMapStore, MapStore } from './support/map-store.js';

const HOUR = 3_600_000;

/** A synchronous store that always fails, like a locked SQLite file. */
const failingSyncStore = {
  capabilities: { synchronous: true, clock: 'client', operations: ['limit', 'reset'] },
  limit(): LimitResult {
    throw new Error('SQLITE_BUSY: database is locked');
  },
  reset(): void {},
} as const satisfies Store;

function rejection(run: () => unknown): unknown {
  try {
    run();
  } catch (error) {
    return error;
  }
  throw new Error('expected a throw');
}

describe('the limiter validates its clock', () => {
  const rules: Array<[string, Rule]> = [
    ['token bucket', tokenBucket({ capacity: 3, refillRate: 1, interval: '1h' })],
    ['sliding window log', slidingWindowLog({ limit: 3, window: '1h' })],
    ['leaky bucket', leakyBucket({ capacity: 3, leakRate: 1, interval: '1h' })],
    ['GCRA', gcra({ limit: 1, period: '1h', burst: 3 })],
  ];

  test.each(rules)('regression: a fractional clock (performance.now style) still limits a %s: 3 of 6, not 6 of 6', (_, rule) => {
    let now = 1_795_531_262_660.075;
    const store = new MapStore();
    const limiter = createLimiter({ store, rules: rule, clock: () => now });
    const allowed = Array.from({ length: 6 }, () => {
      now += 0.3;
      return limiter.limitSync('user').allowed;
    });
    expect(allowed.filter(Boolean)).toHaveLength(3);
    expect(store.last!.now, 'the store gets whole milliseconds').toBe(Math.floor(now));
    expect([...store.records.values()].every((r) => r.state.every(Number.isSafeInteger))).toBe(true);
  });

  test.each([
    Number.NaN,
    Number.POSITIVE_INFINITY,
    -1,
    2 ** 53,
    2 ** 47 + 1,
    '1700000000000' as unknown as number,
    undefined as unknown as number,
  ])('regression: a clock returning %s is refused with INVALID_CLOCK, never read as "allow everything"', async (bad) => {
    const limiter = createLimiter({ store: new MapStore(), rules: tokenBucket({ capacity: 1, refillRate: 1 }), clock: () => bad });
    const error = rejection(() => limiter.limitSync('user'));
    expect(isSluiceError(error) && error.code).toBe('INVALID_CLOCK');
    expect((error as Error).message).toMatch(/clock must return epoch milliseconds/);
    await expect(limiter.limit('user')).rejects.toMatchObject({ code: 'INVALID_CLOCK' });
    const remote = createLimiter({ store: new AsyncMapStore(), rules: tokenBucket({ capacity: 1, refillRate: 1 }), clock: () => bad });
    await expect(remote.limit('user')).rejects.toMatchObject({ code: 'INVALID_CLOCK' });
  });
});

describe('a synchronous store with an asynchronous fallback consumes once', () => {
  test('regression: limitSync refuses before consuming from the async fallback (it consumed, then threw)', async () => {
    const fallback = new AsyncMapStore();
    const limiter = createLimiter({
      store: failingSyncStore,
      rules: tokenBucket({ capacity: 5, refillRate: 1, interval: '1h' }),
      onStoreError: fallback,
      clock: () => HOUR,
    });
    const error = rejection(() => limiter.limitSync('user'));
    expect(isSluiceError(error) && error.code).toBe('UNSUPPORTED_OPERATION');
    expect(fallback.inner.calls, 'nothing was consumed by the refused limitSync').toBe(0);
    // What @sluice/http does next: one limit(), one unit taken from the fallback, one failure counted.
    const decision = await limiter.limit('user');
    expect(decision).toMatchObject({ allowed: true, degraded: true, remaining: 4 });
    expect(fallback.inner.calls).toBe(1);
  });

  test('limitSync over a synchronous fallback still answers synchronously', () => {
    const limiter = createLimiter({
      store: failingSyncStore,
      rules: tokenBucket({ capacity: 5, refillRate: 1 }),
      onStoreError: new MapStore(),
      clock: () => HOUR,
    });
    expect(limiter.limitSync('user')).toMatchObject({ allowed: true, degraded: true, remaining: 4 });
  });
});

describe('shadow mode never refuses', () => {
  test('regression: shadow mode with onStoreError "deny" allows when the store fails (it answered 503)', async () => {
    const limiter = createLimiter({
      store: failingSyncStore,
      rules: tokenBucket({ capacity: 1, refillRate: 1 }),
      onStoreError: 'deny',
      mode: 'shadow',
      clock: () => HOUR,
    });
    const decision = await limiter.limit('user');
    expect(decision).toMatchObject({ allowed: true, reason: 'shadow', degraded: true });
    expect(decision.error).toMatchObject({ code: 'STORE_ERROR' });
  });

  test('shadow mode with a deny policy and an open circuit still allows', async () => {
    const limiter = createLimiter({
      store: failingSyncStore,
      rules: tokenBucket({ capacity: 1, refillRate: 1 }),
      onStoreError: 'deny',
      mode: 'shadow',
      circuitBreaker: { failureThreshold: 1, cooldown: 60_000 },
      clock: () => HOUR,
    });
    await limiter.limit('user');
    expect(limiter.circuit).toBe('open');
    expect(await limiter.limit('user')).toMatchObject({ allowed: true, reason: 'shadow', degraded: true });
  });
});

describe('messages name the method called', () => {
  test('regression: peekSync and refundSync on an async store name themselves, not limitSync', () => {
    const limiter = createLimiter({ store: new AsyncMapStore(), rules: tokenBucket({ capacity: 1, refillRate: 1 }) }) as unknown as {
      peekSync(id: string): unknown;
      refundSync(id: string): unknown;
    };
    expect((rejection(() => limiter.peekSync('u')) as Error).message).toMatch(
      /^\[sluice\] peekSync needs a synchronous store .* use peek\(\)$/,
    );
    expect((rejection(() => limiter.refundSync('u')) as Error).message).toMatch(/refundSync needs a synchronous store .* use refund\(\)$/);
  });
});
