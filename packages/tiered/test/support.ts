import { createLimiter, type LimiterOptions } from '@sluice/core';
import { memoryStore, type MemoryStore } from '@sluice/memory';
import type { LimitRequest, LimitResult, Store, StoreCapabilities } from '@sluice/core/store';
import { tieredStore, type TieredStoreOptions, type TierStrategy } from '../src/index.js';

/** Where the tests' clocks start (epoch ms). */
export const CLOCK_START = 1_700_000_000_000;

/** The first start of a window of `windowMs` at or after CLOCK_START, for tests that count a window from its start. */
export function windowStartAfterClockStart(windowMs: number): number {
  return Math.ceil(CLOCK_START / windowMs) * windowMs;
}

/** A clock the test moves by hand (`clock.now += 600`); `clock.read` is what a store or a limiter is given. */
export class TestClock {
  constructor(public now: number = CLOCK_START) {}
  readonly read = (): number => this.now;
}

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

/** A tier of a fleet of 4 over `remote`, without timers: its syncs and flushes run when a test asks for them. */
export function tier(remote: Store, strategy: TierStrategy, clock: () => number, extra: Partial<TieredStoreOptions> = {}) {
  return tieredStore({ remote, instances: 4, strategy, clock, timers: false, maxKeys: TEST_MAX_KEYS, ...extra });
}

/**
 * One tier over a new shared store, on a test clock that starts at `start` (CLOCK_START unless given): `limiter(rules)`
 * decides through the tier, `direct(rules)` reads and writes the shared store itself, past the tier.
 */
export function tierFixture(
  strategy: TierStrategy,
  { start = CLOCK_START, ...extra }: Partial<TieredStoreOptions> & { start?: number } = {},
) {
  const clock = new TestClock(start);
  const shared = new SharedStore();
  const store = tier(shared, strategy, clock.read, extra);
  const limiter = (rules: LimiterOptions['rules']) => createLimiter({ store, rules, clock: clock.read });
  const direct = (rules: LimiterOptions['rules']) => createLimiter({ store: shared.inner, rules, clock: clock.read });
  return { clock, shared, store, limiter, direct };
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
