// The application API: what code that limits requests calls. What a store author needs (the evaluator, the state
// codec, step functions, key and option helpers, the failure policy) is in `@sluice/core/store` (src/store-api.ts).
// The features beside the limiter have subpaths of their own: `@sluice/core/concurrency` (src/concurrency-api.ts),
// `@sluice/core/shedding` (src/shedding-api.ts), `@sluice/core/config` (src/config-api.ts) and `@sluice/core/analytics`
// (src/analytics-api.ts).
export { createLimiter } from './limiter.js';
export type {
  DecisionEvent,
  Limiter,
  LimiterChanges,
  LimiterMode,
  LimiterOptions,
  LimitOptions,
  ReserveOptions,
  StoreErrorPolicy,
  SyncLimiter,
  TakeOptions,
} from './limiter.js';
export type { DenyMode } from './limiter-api.js';
export type { WaitOptions } from './wait.js';
export type { Decision, DecisionReason, RuleReport } from './decision.js';

export { fixedWindow } from './algorithms/fixed-window.js';
export type { FixedWindowOptions } from './algorithms/fixed-window.js';
export { slidingWindowLog } from './algorithms/sliding-window-log.js';
export type { SlidingWindowLogOptions } from './algorithms/sliding-window-log.js';
export { slidingWindowCounter } from './algorithms/sliding-window-counter.js';
export type { SlidingWindowCounterOptions } from './algorithms/sliding-window-counter.js';
export { tokenBucket } from './algorithms/token-bucket.js';
export type { TokenBucketOptions } from './algorithms/token-bucket.js';
export { leakyBucket } from './algorithms/leaky-bucket.js';
export type { LeakyBucketOptions } from './algorithms/leaky-bucket.js';
export { gcra } from './algorithms/gcra.js';
export type { GcraOptions } from './algorithms/gcra.js';
export type { AlgorithmName, Rule } from './rules.js';
export type { RuleBaseOptions } from './rule-options.js';
export { ruleFromSpec, ruleSpec } from './rule-spec.js';
export type { RuleSpec } from './rule-spec.js';

export type { Store, SyncStore } from './store.js';
export type { CircuitBreakerOptions, CircuitState } from './circuit-breaker.js';

export { SluiceError, isSluiceError } from './errors.js';
export type { SluiceErrorCode } from './errors.js';
export { parseDuration } from './duration.js';
export type { Duration, DurationUnit } from './duration.js';
