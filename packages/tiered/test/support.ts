import { memoryStore, type MemoryStore } from '@sluice/memory';
import type { LimitRequest, LimitResult, Store, StoreCapabilities } from '@sluice/core/store';

/**
 * maxKeys for the stores the tests make, far above the identities any test uses: the default (100,000) preallocates
 * about 1.5 MiB per store, and the property tests make a few stores per run, thousands of runs in all.
 */
export const TEST_MAX_KEYS = 4096;

/**
 * A shared store for in-process fleets: a memory store seen as a remote one (every answer a promise, one
 * microtask later, as a network store's would be), which counts its calls, records them, and can be made to fail.
 */
export class SharedStore implements Store {
  readonly capabilities: StoreCapabilities = { synchronous: false, clock: 'client', operations: ['limit', 'reset', 'take', 'reserve'] };
  readonly inner: MemoryStore = memoryStore({ maxKeys: TEST_MAX_KEYS });
  calls = 0;
  readonly operations: string[] = [];
  failing = false;

  limit(request: LimitRequest): Promise<LimitResult> {
    this.calls++;
    this.operations.push(`${request.operation}:${request.cost}`);
    if (this.failing) return Promise.reject(new Error('connection reset'));
    return Promise.resolve().then(() => this.inner.limit(request));
  }

  reset(key: string, ruleIds: readonly string[]): Promise<void> {
    return Promise.resolve().then(() => this.inner.reset(key, ruleIds));
  }
}

/** A small seeded PRNG (mulberry32), so a failing interleaving can be replayed. */
export function prng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}
