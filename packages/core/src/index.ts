export { createLimiter } from './limiter.js';
export type { Limiter, LimiterMode, LimiterOptions, LimitOptions, ReserveOptions, StoreErrorPolicy, SyncLimiter, TakeOptions } from './limiter.js';
export type { Decision, DecisionReason, RuleReport } from './decision.js';
export { decide } from './decision.js';

export { fixedWindow, fixedWindowStep } from './algorithms/fixed-window.js';
export type { FixedWindowOptions, FixedWindowParams } from './algorithms/fixed-window.js';
export { slidingWindowLog, slidingWindowLogStep } from './algorithms/sliding-window-log.js';
export type { SlidingWindowLogOptions, SlidingWindowLogParams } from './algorithms/sliding-window-log.js';
export { slidingWindowCounter, slidingWindowCounterStep } from './algorithms/sliding-window-counter.js';
export type { SlidingWindowCounterOptions, SlidingWindowCounterParams } from './algorithms/sliding-window-counter.js';
export { tokenBucket, tokenBucketStep } from './algorithms/token-bucket.js';
export type { TokenBucketOptions, TokenBucketParams } from './algorithms/token-bucket.js';
export { leakyBucket, leakyBucketStep } from './algorithms/leaky-bucket.js';
export type { LeakyBucketOptions, LeakyBucketParams } from './algorithms/leaky-bucket.js';
export { gcra, gcraStep } from './algorithms/gcra.js';
export type { GcraOptions, GcraParams } from './algorithms/gcra.js';

export { NEVER, ceilDiv, isStepMode, newStepScratch } from './algorithm.js';
export type { Mode, State, Step, StepInto, StepMode, StepOutcome, StepScratch } from './algorithm.js';
export { STEPS, evaluate, stepRule, stepRuleInto } from './rules.js';
export { ALGORITHM_NAMES } from './algorithm-names.js';
export type { AlgorithmName, Evaluation, ParamsByAlgorithm, ResolvedRule, Rule, RuleOutcome } from './rules.js';
export type { RuleBaseOptions } from './rule-options.js';

export { EXPIRY_GRACE_MS, decodeState, encodeState } from './store.js';
export type {
  FastPathStore,
  LimitRequest,
  LimitResult,
  RuleAnswer,
  Store,
  StoreCapabilities,
  StoreOperation,
  SyncStore,
} from './store.js';

export { createFailurePolicy, Failover } from './failure-policy.js';
export type { FailurePolicy, FailurePolicyOptions } from './failure-policy.js';
export { CircuitBreaker } from './circuit-breaker.js';
export type { CircuitBreakerOptions, CircuitState } from './circuit-breaker.js';
export { SluiceError, describe as describeValue, isSluiceError } from './errors.js';
export { rejectUnknownOptions } from './validate.js';
export type { SluiceErrorCode } from './errors.js';
export { parseDuration } from './duration.js';
export type { Duration, DurationUnit } from './duration.js';
export { hash32, identityKey, MAX_VERBATIM_IDENTITY } from './identity.js';
