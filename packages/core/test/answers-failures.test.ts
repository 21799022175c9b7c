/**
 * A store that answers its own failures (`capabilities.answersFailures`, as a local tier does) changes two limiter
 * defaults: a deadline the store missed is a refusal (`onStoreError: 'deny'`), and the limiter has no breaker of
 * its own. The store already gave every answer it could prove safe; an answer it could not give in time was not,
 * so it must not admit. Options given explicitly still win. Driven with stores that never answer.
 */
import { describe, expect, test } from 'vitest';
import { createLimiter, fixedWindow, type Store } from '../src/index.js';
import type { LimitResult } from '../src/store/index.js';

/** An asynchronous store whose calls never settle: every decision is answered by the limiter's deadline. */
function silentStore(answersFailures: boolean): Store & { calls: number } {
  const store = {
    calls: 0,
    capabilities: { synchronous: false, clock: 'client', operations: ['limit', 'reset'], answersFailures } as const,
    limit(): Promise<LimitResult> {
      store.calls++;
      return new Promise<LimitResult>(() => undefined);
    },
    reset(): void {},
  };
  return store;
}

const rules = fixedWindow({ limit: 5, window: '1s' });

describe('a limiter over a store that answers its own failures', () => {
  test("refuses when its deadline passes (onStoreError defaults to 'deny'), where a plain store's limiter admits", async () => {
    const own = createLimiter({ store: silentStore(true), rules, timeout: 20 });
    const plain = createLimiter({ store: silentStore(false), rules, timeout: 20 });
    const [refused, admitted] = await Promise.all([own.limit('a'), plain.limit('a')]);
    expect(refused).toMatchObject({ allowed: false, degraded: true, reason: 'store_unavailable' });
    expect(refused.error).toMatchObject({ code: 'STORE_TIMEOUT' });
    expect(admitted).toMatchObject({ allowed: true, degraded: true, reason: 'store_unavailable' });
  });

  test('has no breaker of its own: every decision still reaches the store after many failures in a row', async () => {
    const store = silentStore(true);
    const limiter = createLimiter({ store, rules, timeout: 10 });
    for (let i = 0; i < 8; i++) await limiter.limit('a');
    expect(limiter.circuit).toBe('closed');
    expect(store.calls).toBe(8);
    // A plain store's limiter opens its breaker after 5 failures and stops calling the store.
    const plainStore = silentStore(false);
    const plain = createLimiter({ store: plainStore, rules, timeout: 10 });
    for (let i = 0; i < 8; i++) await plain.limit('a');
    expect(plain.circuit).toBe('open');
    expect(plainStore.calls).toBe(5);
  });

  test('options given explicitly win: onStoreError and circuitBreaker', async () => {
    const store = silentStore(true);
    const limiter = createLimiter({ store, rules, timeout: 10, onStoreError: 'allow', circuitBreaker: { failureThreshold: 2 } });
    expect(await limiter.limit('a')).toMatchObject({ allowed: true, degraded: true });
    await limiter.limit('a');
    expect(limiter.circuit).toBe('open');
    expect(store.calls).toBe(2);
  });
});
