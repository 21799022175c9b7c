/**
 * Test doubles the adapters' and @sluice/http's own tests share: a fake clock, a limiter on the memory store, a
 * promise held open by the test, and a store that fails every call.
 */
import { createLimiter, type LimiterOptions, type Store } from '@sluice/core';
import { memoryStore } from '@sluice/memory';

/** A fake clock on a whole 10 s boundary plus 3 s, so a 10 s fixed window has 7 s left. */
export function fakeClock(start = 1_700_000_003_000) {
  const clock = { now: start, read: () => clock.now };
  return clock;
}

export function memoryLimiter(options: Omit<LimiterOptions, 'store'>) {
  return createLimiter({ store: memoryStore(), ...options });
}

/** A promise and the functions that settle it, to hold background work open. */
export function deferred<T = void>() {
  let resolve!: (value: T) => void;
  let reject!: (error: unknown) => void;
  const promise = new Promise<T>((res, rej) => {
    resolve = res;
    reject = rej;
  });
  return { promise, resolve, reject };
}

/** A store that fails every call, as a dead Redis does: for the failure-policy paths. */
export function brokenStore(): Store {
  return {
    capabilities: { synchronous: false, clock: 'client', operations: ['limit', 'reset'] },
    limit: () => Promise.reject(new Error('connection refused')),
    reset: () => Promise.reject(new Error('connection refused')),
  };
}
