// `@sluice/core/store`: what a store author needs and an application does not. The evaluator and the step functions,
// the state codec, lease evaluation, identity keys, the failure policy (for a store that wraps a remote one) and the
// store contract's types. The limiter, the rule factories and SluiceError are in the root export (src/index.ts).
// The option checks the sluice packages share are in `@sluice/core/internal` (src/internal/); internals
// (ceilDiv, STEPS, hash32, CircuitBreaker) are exported from nowhere.
export { fixedWindowStep } from '../algorithms/fixed-window.js';
export type { FixedWindowParams } from '../algorithms/fixed-window.js';
export { slidingWindowLogStep } from '../algorithms/sliding-window-log.js';
export type { SlidingWindowLogParams } from '../algorithms/sliding-window-log.js';
export { slidingWindowCounterStep } from '../algorithms/sliding-window-counter.js';
export type { SlidingWindowCounterParams } from '../algorithms/sliding-window-counter.js';
export { tokenBucketStep } from '../algorithms/token-bucket.js';
export type { TokenBucketParams } from '../algorithms/token-bucket.js';
export { leakyBucketStep } from '../algorithms/leaky-bucket.js';
export type { LeakyBucketParams } from '../algorithms/leaky-bucket.js';
export { gcraStep } from '../algorithms/gcra.js';
export type { GcraParams } from '../algorithms/gcra.js';

export { NEVER, isStepOperation, newStepScratch } from '../algorithms/algorithm.js';
export type { Operation, State, Step, StepInto, StepOperation, StepOutcome, StepScratch } from '../algorithms/algorithm.js';
export { evaluate } from './evaluate.js';
export { stepRule, stepRuleInto } from '../algorithms/rules.js';
export { ALGORITHM_NAMES } from '../algorithms/names.js';
export type { AlgorithmName, Evaluation, ParamsByAlgorithm, ResolvedRule, Rule, RuleOutcome } from '../algorithms/rules.js';

export { EXPIRY_GRACE_MS, decodeState, encodeState } from './store.js';
export { LEASE_ID_PATTERN, evaluateLease } from './leases.js';
export type { LeaseEntries, LeaseEvaluation, LeaseOp, LeaseRequest, LeaseResult } from './leases.js';
export type {
  FastPath,
  FastPathStore,
  FastRequest,
  LimitRequest,
  LimitResult,
  MemoryAnswer,
  MemoryFirstStore,
  MemoryPath,
  RuleAnswer,
  Store,
  StoreCapabilities,
  StoreOperation,
  SyncStore,
} from './store.js';

export { createFailurePolicy, FailureAnswer } from './failure-policy.js';
export type { FailurePolicy, FailurePolicyOptions } from './failure-policy.js';
export { identityKey, MAX_VERBATIM_IDENTITY } from '../shared/identity.js';
