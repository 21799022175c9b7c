import { type State, type Step, type StepInto, type StepOperation, type StepOutcome, type StepScratch } from './algorithm.js';
import { fixedWindowInto, fixedWindowStep, type FixedWindowParams } from './algorithms/fixed-window.js';
import { gcraInto, gcraStep, type GcraParams } from './algorithms/gcra.js';
import { leakyBucketStep, type LeakyBucketParams } from './algorithms/leaky-bucket.js';
import {
  slidingWindowCounterInto,
  slidingWindowCounterStep,
  type SlidingWindowCounterParams,
} from './algorithms/sliding-window-counter.js';
import { slidingWindowLogStep, type SlidingWindowLogParams } from './algorithms/sliding-window-log.js';
import { tokenBucketInto, tokenBucketStep, type TokenBucketParams } from './algorithms/token-bucket.js';

export interface ParamsByAlgorithm {
  'fixed-window': FixedWindowParams;
  'sliding-window-log': SlidingWindowLogParams;
  'sliding-window-counter': SlidingWindowCounterParams;
  'token-bucket': TokenBucketParams;
  'leaky-bucket': LeakyBucketParams;
  gcra: GcraParams;
}

export type AlgorithmName = keyof ParamsByAlgorithm;

/** What a store needs to run one rule: plain, serialisable data. */
export type ResolvedRule = {
  [A in AlgorithmName]: {
    readonly id: string;
    readonly algorithm: A;
    readonly params: ParamsByAlgorithm[A];
    /** Capacity in cost units: what decisions and headers report as the limit. */
    readonly limit: number;
  };
}[AlgorithmName];

/** A rule as built by `fixedWindow()`, `tokenBucket()` and the other factories. */
export type Rule = ResolvedRule & {
  /** The time the full capacity takes to come back; reported as the policy window in headers. */
  readonly windowMs: number;
  /** Fixed window only: shift the boundaries per identity by a stable hash of it. */
  readonly stagger: boolean;
};

export const STEPS: { readonly [A in AlgorithmName]: Step<ParamsByAlgorithm[A]> } = {
  'fixed-window': fixedWindowStep,
  'sliding-window-log': slidingWindowLogStep,
  'sliding-window-counter': slidingWindowCounterStep,
  'token-bucket': tokenBucketStep,
  'leaky-bucket': leakyBucketStep,
  gcra: gcraStep,
};

export function stepRule(rule: ResolvedRule, state: State | undefined, now: number, cost: number, operation: StepOperation): StepOutcome {
  return (STEPS[rule.algorithm] as Step<ResolvedRule['params']>)(state, now, cost, operation, rule.params);
}

/** Steps that can write into a scratch outcome; the others are run through `STEPS` and copied. */
const STEPS_INTO: { readonly [A in AlgorithmName]?: StepInto<ParamsByAlgorithm[A]> } = {
  'fixed-window': fixedWindowInto,
  'sliding-window-counter': slidingWindowCounterInto,
  'token-bucket': tokenBucketInto,
  gcra: gcraInto,
};

/**
 * `stepRule` writing its outcome into `out` (same values: test/fast-path-twins.property.test.ts), for in-process
 * executors that decide per call without allocating. `out.next` is overwritten: copy it before the next call if it
 * must be kept. Kept because `pnpm bench memory` shows it pays: without it (the step allocated, then copied) a
 * memory-store limitSync decision took about 1.8x as long.
 */
export function stepRuleInto(
  rule: ResolvedRule,
  state: State | undefined,
  now: number,
  cost: number,
  operation: StepOperation,
  out: StepScratch,
): void {
  const into = STEPS_INTO[rule.algorithm] as StepInto<ResolvedRule['params']> | undefined;
  if (into !== undefined) {
    into(state, now, cost, operation, rule.params, out);
    return;
  }
  const step = stepRule(rule, state, now, cost, operation);
  const next = out.next;
  next.length = step.next.length;
  for (let i = 0; i < next.length; i++) next[i] = step.next[i]!;
  out.allowed = step.allowed;
  out.remaining = step.remaining;
  out.resetAt = step.resetAt;
  out.retryAt = step.retryAt;
  out.ttlMs = step.ttlMs;
}

/** One rule's answer, as reported in a decision. */
export interface RuleOutcome {
  readonly id: string;
  readonly allowed: boolean;
  readonly limit: number;
  readonly remaining: number;
  readonly resetAt: number;
  /** Earliest time the same cost passes this rule; `now` when allowed, -1 when never. */
  readonly retryAt: number;
  /** `take` only: units granted, the same on every rule of the request (0 when none fit). */
  readonly granted?: number;
  /**
   * `reserve` only: when the booked cost starts, epoch ms, the same on every rule. When the request is denied,
   * the start it would have had (beyond `maxWaitMs`), or -1 when the cost can never fit.
   */
  readonly startAt?: number;
}

/** The result of running every rule of a request against the states read for it. */
export interface Evaluation {
  readonly allowed: boolean;
  readonly outcomes: RuleOutcome[];
  /** The states to write, rule by rule, with their time to live; undefined when nothing must be written. */
  readonly writes: Array<{ readonly state: State; readonly ttlMs: number }> | undefined;
}
