import { type State, type Step, type StepInto, type StepOperation, type StepOutcome, type StepScratch } from './algorithm.js';
import { fixedWindowInto, fixedWindowStep } from './fixed-window.js';
import { gcraInto, gcraStep } from './gcra.js';
import { leakyBucketStep } from './leaky-bucket.js';
import { slidingWindowCounterInto, slidingWindowCounterStep } from './sliding-window-counter.js';
import { slidingWindowLogStep } from './sliding-window-log.js';
import { tokenBucketInto, tokenBucketStep } from './token-bucket.js';
import type { AlgorithmName, ParamsByAlgorithm, ResolvedRule } from './rule-types.js';

export type { AlgorithmName, Evaluation, ParamsByAlgorithm, ResolvedRule, Rule, RuleOutcome } from './rule-types.js';

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
