// The application API: what code that limits requests calls. What a store author needs (the evaluator, the state
// codec, step functions, key and option helpers, the failure policy) is in `@sluice/core/store` (src/store/).
// The features beside the limiter have subpaths of their own: `@sluice/core/concurrency` (src/concurrency/),
// `@sluice/core/shedding` (src/shedding/), `@sluice/core/config` (src/config/) and `@sluice/core/analytics`
// (src/analytics/).
export { createLimiter } from './limiter/limiter.js';
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
} from './limiter/types.js';
export type { DenyMode } from './limiter/types.js';
export type { WaitOptions } from './limiter/wait.js';
export type { Decision, DecisionReason, RuleReport } from './limiter/decision.js';

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
export type { AlgorithmName, Rule } from './algorithms/rules.js';
export type { RuleBaseOptions } from './algorithms/rule-options.js';
export { ruleFromSpec, ruleSpec } from './algorithms/rule-spec.js';
export type { RuleSpec } from './algorithms/rule-spec.js';

export type { Store, SyncStore } from './store/store.js';
export type { CircuitBreakerOptions, CircuitState } from './store/circuit-breaker.js';

export { SluiceError, isSluiceError } from './shared/errors.js';
export type { SluiceErrorCode } from './shared/errors.js';
export { parseDuration } from './shared/duration.js';
export type { Duration, DurationUnit } from './shared/duration.js';
