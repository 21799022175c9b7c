/**
 * The Upstash store with concurrency leases, for `createConcurrencyLimiter()`. A class of its own rather than a
 * method of UpstashStore: a method cannot be tree-shaken, so every edge bundle that only rate limits would ship the
 * lease script and its codec (a tenth of what @sluice/* adds to a Hono worker on Upstash, gzipped).
 */
import type { LeaseRequest, LeaseResult, StoreOperation } from '@sluice/core/store';
import { leaseCall, parseLeaseReply } from '@sluice/redis-script';
import type { UpstashRestOptions } from './upstash-rest.js';
import { UPSTASH_LEASE_SCRIPT } from './upstash-script.js';
import { restClientFor, UpstashStore, type UpstashClient, type UpstashStoreOptions } from './upstash-store.js';

const OPERATIONS: readonly StoreOperation[] = ['limit', 'reset', 'take', 'reserve', 'lease'];

/**
 * `upstashStore()` that also holds concurrency leases: the same client argument, options and decisions, plus
 * `lease()`. One store serves both a rate limiter and a concurrency limiter.
 * @example
 * const store = upstashLeaseStore({ url: env.UPSTASH_REDIS_REST_URL, token: env.UPSTASH_REDIS_REST_TOKEN });
 * const inFlight = createConcurrencyLimiter({ store, limit: 5 });
 */
export function upstashLeaseStore(redis: UpstashClient | UpstashRestOptions, options: UpstashStoreOptions = {}): UpstashLeaseStore {
  return new UpstashLeaseStore(restClientFor(redis), options);
}

export class UpstashLeaseStore extends UpstashStore {
  constructor(redis: UpstashClient, options: UpstashStoreOptions = {}) {
    super(redis, options, 'upstashLeaseStore', OPERATIONS);
  }

  /**
   * Concurrency leases (core's `evaluateLease()`): one HTTP request, one call of the lease script on the sorted
   * set `${key}:lease`, atomic, on Redis TIME (or `request.now` with `clock: 'client'`). Rejects with
   * INVALID_OPTION, sending nothing, when the id is not 1 to 64 characters of letters, digits, '_' or '-'.
   */
  async lease(request: LeaseRequest): Promise<LeaseResult> {
    const { keys, args } = leaseCall(request, this.clock, 'upstashLeaseStore.lease');
    return parseLeaseReply(await this.run(UPSTASH_LEASE_SCRIPT, keys, args));
  }
}
