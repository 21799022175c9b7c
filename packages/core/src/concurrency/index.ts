// `@sluice/core/concurrency`: the concurrency limiter, "at most N requests in flight per identity", with the
// types of its options, leases and events. The rate limiter is in the root export (src/index.ts).
export { createConcurrencyLimiter } from './concurrency-limiter.js';
export type {
  AbortSignalLike,
  AcquireOptions,
  ConcurrencyLimiter,
  ConcurrencyLimiterOptions,
  Lease,
  LeaseDecision,
  LeaseEvent,
} from './concurrency-limiter.js';
