import { SluiceError, type CircuitBreakerOptions, type Duration, type Store } from '@sluice/core';
import {
  clockOption,
  describeValue as describe,
  durationOption,
  optionalFunction,
  optionNames,
  rejectUnknownOptions,
} from '@sluice/core/internal';

/**
 * How the tier answers from process memory (README, "Strategies"):
 * - `deny-cache`: only refusals are answered locally, until the remote store's `retryAt`. Exact.
 * - `lease`: units are taken from the remote store in batches (one atomic `take`) and spent locally until their
 *   window ends. Never over the limit; under-admission up to the units held in other instances' batches.
 * - `async`: decisions are local against the last known remote state, counted remotely in the background.
 *   Over-admission bounded by instances × maxUnsynced per window.
 * Every strategy also keeps the deny cache.
 */
export type TierStrategy = 'deny-cache' | 'lease' | 'async';

export interface LeaseOptions {
  /** Most units taken in one batch; a batch is a sixteenth of the smallest limit, at most this. @default 100 */
  maxBatch?: number;
  /** How long a batch may be spent before what is left goes back (never past its fixed window's end). @default '1s' */
  ttl?: Duration;
}

export interface AsyncCountingOptions {
  /** Units admitted locally before they are counted remotely (a flush). @default 10 */
  flushEvery?: number;
  /** Longest time local counts wait for a flush. @default '100ms' */
  syncInterval?: Duration;
  /**
   * Most units one instance admits without the remote store having counted them; it decides remotely (exactly)
   * beyond. The over-admission bound is instances × maxUnsynced. @default 2 × flushEvery
   */
  maxUnsynced?: number;
  /** Decide remotely once the last known remaining, less local counts, would drop below this. @default 0 */
  threshold?: number;
}

export interface TieredStoreOptions {
  /** The shared store: `redisStore(client)`, `upstashStore(redis)`, `sqliteStore(db)`. Closing the tier never closes it. */
  remote: Store;
  /**
   * How many processes share the remote store. While the remote store is down, each one limits on its own share
   * (every rule's limit ÷ instances), and the README's bounds are stated in it.
   */
  instances: number;
  /** @default 'deny-cache' */
  strategy?: TierStrategy;
  /** Most identities held locally (a bounded LRU, as the memory store's). @default 100_000 */
  maxKeys?: number;
  lease?: LeaseOptions;
  async?: AsyncCountingOptions;
  /**
   * Deadline for one remote call. Below the limiter's own (250 ms by default), so the tier answers from its local
   * share before the limiter gives up on it. A call that misses it is answered with a degraded refusal: a slow
   * store is not an outage (see the README, "When the shared store fails"). @default '150ms'
   */
  timeout?: Duration;
  /**
   * Stop calling a failing remote store for a while; the short cooldown brings the fleet back to the shared state
   * within a second of recovery. `false` turns it off. @default { failureThreshold: 3, cooldown: '500ms' }
   */
  circuitBreaker?: CircuitBreakerOptions | false;
  /**
   * Hands background work (returning leases, flushing counts) to the platform, e.g. `ctx.waitUntil` on
   * Cloudflare Workers or `waitUntil` from `@vercel/functions`. Without it, background work runs on its own and
   * `close()` waits for it.
   */
  waitUntil?: (promise: Promise<unknown>) => void;
  /**
   * A timer that returns quiet identities' leases and flushes their counts. Only where the timer can be unref'd
   * (Node, Bun): elsewhere background work piggybacks on later calls. @default true
   */
  timers?: boolean;
  /**
   * Epoch ms, for background work (lease returns, flushes) and the timer. Give the limiter's clock if the limiter
   * has its own: decisions are timed by the limiter's clock, background work by this one. @default Date.now
   */
  clock?: () => number;
}

export interface ResolvedOptions {
  readonly remote: Store;
  readonly instances: number;
  readonly strategy: TierStrategy;
  readonly maxKeys: number;
  readonly maxBatch: number;
  readonly leaseTtlMs: number;
  readonly flushEvery: number;
  readonly syncIntervalMs: number;
  readonly maxUnsynced: number;
  readonly threshold: number;
  readonly timeout: Duration;
  readonly circuitBreaker: CircuitBreakerOptions | false;
  readonly waitUntil: ((promise: Promise<unknown>) => void) | undefined;
  readonly timers: boolean;
  readonly clock: () => number;
}

const KNOWN = optionNames<TieredStoreOptions>({
  remote: true,
  instances: true,
  strategy: true,
  maxKeys: true,
  lease: true,
  async: true,
  timeout: true,
  circuitBreaker: true,
  waitUntil: true,
  timers: true,
  clock: true,
});
const STRATEGIES: readonly TierStrategy[] = ['deny-cache', 'lease', 'async'];
const WHERE = 'tieredStore';

export function resolveOptions(raw: TieredStoreOptions): ResolvedOptions {
  if (typeof raw !== 'object' || raw === null) {
    throw new SluiceError(
      'INVALID_OPTION',
      `${WHERE}: options must be an object such as { remote: redisStore(client), instances: 4 }, got ${describe(raw)}`,
    );
  }
  rejectUnknownOptions(raw, KNOWN, WHERE);
  const remote = raw.remote as Store | undefined;
  if (typeof remote !== 'object' || remote === null || typeof remote.limit !== 'function' || typeof remote.capabilities !== 'object') {
    throw new SluiceError(
      'INVALID_OPTION',
      `${WHERE}: remote must be a store such as redisStore(client) or upstashStore(redis), got ${describe(remote)}`,
    );
  }
  const strategy = raw.strategy ?? 'deny-cache';
  if (!STRATEGIES.includes(strategy)) {
    throw new SluiceError('INVALID_OPTION', `${WHERE}: strategy must be 'deny-cache', 'lease' or 'async', got ${describe(strategy)}`);
  }
  if (strategy !== 'deny-cache' && !remote.capabilities.operations.includes('take')) {
    throw new SluiceError(
      'INVALID_OPTION',
      `${WHERE}: strategy '${strategy}' needs a remote store that supports take (its capabilities.operations lack 'take'); sluice's Redis, Upstash, SQLite and memory stores do`,
    );
  }
  const lease = section(raw.lease, 'lease', ['maxBatch', 'ttl']) as LeaseOptions;
  const counting = section(raw.async, 'async', ['flushEvery', 'syncInterval', 'maxUnsynced', 'threshold']) as AsyncCountingOptions;
  const flushEvery = integer(counting.flushEvery ?? 10, 'async.flushEvery', 1, 1_000_000);
  const maxUnsynced = integer(counting.maxUnsynced ?? 2 * flushEvery, 'async.maxUnsynced', 1, 1_000_000);
  if (maxUnsynced < flushEvery) {
    throw new SluiceError(
      'INVALID_OPTION',
      `${WHERE}: async.maxUnsynced (${maxUnsynced}) must be at least async.flushEvery (${flushEvery})`,
    );
  }
  const timers = raw.timers ?? true;
  if (typeof timers !== 'boolean')
    throw new SluiceError('INVALID_OPTION', `${WHERE}: timers must be true or false, got ${describe(timers)}`);
  return {
    remote,
    instances: integer(raw.instances, 'instances', 1, 100_000),
    strategy,
    maxKeys: integer(raw.maxKeys ?? 100_000, 'maxKeys', 1, 10_000_000),
    maxBatch: integer(lease.maxBatch ?? 100, 'lease.maxBatch', 1, 1_000_000),
    leaseTtlMs: durationOption(lease.ttl ?? 1000, `${WHERE}: lease.ttl`, { min: 1, max: 3_600_000 }),
    flushEvery,
    syncIntervalMs: durationOption(counting.syncInterval ?? 100, `${WHERE}: async.syncInterval`, { min: 1, max: 3_600_000 }),
    maxUnsynced,
    threshold: integer(counting.threshold ?? 0, 'async.threshold', 0, Number.MAX_SAFE_INTEGER),
    timeout: raw.timeout ?? 150,
    circuitBreaker: raw.circuitBreaker ?? { failureThreshold: 3, cooldown: 500 },
    waitUntil: optionalFunction(raw.waitUntil, `${WHERE}: waitUntil`, '(promise) => void'),
    timers,
    clock: clockOption(raw.clock, `${WHERE}: clock`),
  };
}

function section(value: unknown, field: string, known: readonly string[]): Record<string, unknown> {
  if (value === undefined) return {};
  if (typeof value !== 'object' || value === null) {
    throw new SluiceError('INVALID_OPTION', `${WHERE}: ${field} must be an object with ${known.join(', ')}, got ${describe(value)}`);
  }
  rejectUnknownOptions(value as Record<string, unknown>, known, `${WHERE}: ${field}`);
  return value as Record<string, unknown>;
}

function integer(value: unknown, field: string, min: number, max: number): number {
  if (typeof value !== 'number' || !Number.isSafeInteger(value) || value < min || value > max) {
    throw new SluiceError('INVALID_OPTION', `${WHERE}: ${field} must be an integer from ${min} to ${max}, got ${describe(value)}`);
  }
  return value;
}
