import { isStepOperation, type Operation, type State, type StepOutcome } from '../algorithms/algorithm.js';
import { reserveEvaluation, takeEvaluation } from './operations.js';
import { stepRule, type Evaluation, type ResolvedRule } from '../algorithms/rules.js';

/**
 * Runs a compound request all-or-nothing: every rule is stepped; if any denies, nothing is consumed from any
 * rule and the outcomes report the state as it was. This is the reference that every store executor
 * (memory, SQLite, the Lua scripts) must match. `take` and `reserve` are defined here, on top of the steps
 * (see store/operations.ts); `maxWaitMs` is read by `reserve` only.
 */
export function evaluate(
  rules: readonly ResolvedRule[],
  states: ReadonlyArray<State | undefined>,
  now: number,
  cost: number,
  operation: Operation,
  maxWaitMs = 0,
): Evaluation {
  if (!isStepOperation(operation)) {
    return operation === 'take' ? takeEvaluation(rules, states, now, cost) : reserveEvaluation(rules, states, now, cost, maxWaitMs);
  }
  const steps: StepOutcome[] = [];
  let allowed = true;
  for (let i = 0; i < rules.length; i++) {
    const step = stepRule(rules[i]!, states[i], now, cost, operation);
    steps.push(step);
    if (!step.allowed) allowed = false;
  }
  if (!allowed && operation === 'consume' && rules.length > 1) {
    // All-or-nothing: a rule that would have consumed reports its untouched state instead.
    for (let i = 0; i < rules.length; i++) {
      if (steps[i]!.allowed) steps[i] = stepRule(rules[i]!, states[i], now, cost, 'peek');
    }
  }
  const outcomes = steps.map((step, i) => ({
    id: rules[i]!.id,
    allowed: step.allowed,
    limit: rules[i]!.limit,
    remaining: step.remaining,
    resetAt: step.resetAt,
    retryAt: step.retryAt,
  }));
  const write = (operation === 'consume' && allowed && cost > 0) || (operation === 'refund' && cost > 0);
  return { allowed, outcomes, writes: write ? steps.map((s) => ({ state: s.next, ttlMs: s.ttlMs })) : undefined };
}
