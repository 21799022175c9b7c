import { NEVER } from '../algorithms/algorithm.js';
import type { SluiceError } from '../shared/errors.js';
import type { Rule, RuleOutcome } from '../algorithms/rules.js';
import type { LimitRequest, RuleAnswer } from '../store/store.js';

/**
 * Why a decision came out as it did.
 * - `ok`: every rule had room.
 * - `rate_limited`: a rule was out of room; `retryAfter` says when the same cost fits.
 * - `cost_exceeds_limit`: the cost is larger than a rule's capacity and can never pass; `retryAfter` is Infinity.
 * - `shadow`: a rule would have denied, but the limiter runs in shadow mode and let it through.
 * - `disabled`: the limiter is switched off (kill switch); nothing was counted.
 * - `store_unavailable`: the store failed or timed out; the failure policy decided (see `degraded`).
 */
export type DecisionReason = 'ok' | 'rate_limited' | 'cost_exceeds_limit' | 'shadow' | 'disabled' | 'store_unavailable';

/** One rule's view of a decision, for headers that report several policies. */
export interface RuleReport extends RuleOutcome {
  readonly windowMs: number;
}

export interface Decision {
  readonly allowed: boolean;
  readonly reason: DecisionReason;
  /** Capacity of the deciding rule, in cost units. */
  readonly limit: number;
  /** Units left in the deciding rule after this request. */
  readonly remaining: number;
  /** When the deciding rule is back to full capacity, epoch ms. */
  readonly resetAt: number;
  /** Milliseconds until the same cost would pass: 0 when allowed, Infinity when it never can. */
  readonly retryAfter: number;
  /** True when the store failed and the failure policy answered instead of the algorithm. */
  readonly degraded: boolean;
  /** Id of the deciding rule: the one that denied (latest retry), or the one with least room. */
  readonly rule: string;
  /** Every rule's outcome, in the limiter's rule order. */
  readonly rules: readonly RuleReport[];
  /** The time the decision was made at, epoch ms (the store's clock for store-clock stores). */
  readonly now: number;
  /** The store error behind a degraded decision. */
  readonly error?: unknown;
  /** `take` only: units granted now, from 0 to the cost asked for (the same on every rule). */
  readonly granted?: number;
  /**
   * `reserve` only: when the booked cost may start, epoch ms (wait `startAt − now`). On a denial, the start it
   * would have had beyond `maxWait`, or -1 when the cost can never fit.
   */
  readonly startAt?: number;
}

/** Combines per-rule outcomes into one decision: the strictest rule speaks for the request. */
export function combineOutcomes(rules: readonly Rule[], outcomes: readonly RuleOutcome[], now: number): Decision {
  let decider = 0;
  let allowed = true;
  for (let i = 0; i < outcomes.length; i++) {
    const o = outcomes[i]!;
    if (!o.allowed) {
      if (allowed || waitRank(o) > waitRank(outcomes[decider]!)) decider = i;
      allowed = false;
    } else if (allowed && o.remaining < outcomes[decider]!.remaining) {
      decider = i;
    }
  }
  const chosen = outcomes[decider]!;
  const never = chosen.retryAt === NEVER && !allowed;
  const reports = outcomes.length === 1 ? [report(chosen, rules[0]!.windowMs)] : outcomes.map((o, i) => report(o, rules[i]!.windowMs));
  const decision: Decision = {
    allowed,
    reason: allowed ? 'ok' : never ? 'cost_exceeds_limit' : 'rate_limited',
    limit: chosen.limit,
    remaining: chosen.remaining,
    resetAt: chosen.resetAt,
    retryAfter: allowed ? 0 : never ? Number.POSITIVE_INFINITY : Math.max(0, chosen.retryAt - now),
    degraded: false,
    rule: chosen.id,
    rules: reports,
    now,
  };
  // take and reserve answers carry one value for the whole request, the same on every rule's outcome.
  if (chosen.granted !== undefined) return { ...decision, granted: chosen.granted };
  if (chosen.startAt !== undefined) return { ...decision, startAt: chosen.startAt };
  return decision;
}

/**
 * `combineOutcomes` for one rule answered through a store's seam (a FastPathStore's or a MemoryFirstStore's
 * `limitOne`): the same decision, field for field (test/fast-path-twins.property.test.ts), without the outcome and
 * report arrays. Part of the limiter's one seam, kept because `pnpm bench memory` shows it pays (about 20% of a
 * limitSync decision).
 */
export function combineOneOutcome(rule: Rule, answer: RuleAnswer, now: number): Decision {
  const allowed = answer.allowed;
  const never = answer.retryAt === NEVER && !allowed;
  const report: RuleReport = {
    id: rule.id,
    allowed,
    limit: rule.limit,
    remaining: answer.remaining,
    resetAt: answer.resetAt,
    retryAt: answer.retryAt,
    windowMs: rule.windowMs,
  };
  return {
    allowed,
    reason: allowed ? 'ok' : never ? 'cost_exceeds_limit' : 'rate_limited',
    limit: rule.limit,
    remaining: answer.remaining,
    resetAt: answer.resetAt,
    retryAfter: allowed ? 0 : never ? Number.POSITIVE_INFINITY : Math.max(0, answer.retryAt - now),
    degraded: false,
    rule: rule.id,
    rules: [report],
    now,
  };
}

/** Written out rather than spread: one object shape for every report, and no property enumeration per decision. */
function report(o: RuleOutcome, windowMs: number): RuleReport {
  return { id: o.id, allowed: o.allowed, limit: o.limit, remaining: o.remaining, resetAt: o.resetAt, retryAt: o.retryAt, windowMs };
}

function waitRank(outcome: RuleOutcome): number {
  return outcome.retryAt === NEVER ? Number.POSITIVE_INFINITY : outcome.retryAt;
}

/** How long a caller told "denied by policy" should wait: the order of a reconnect, not of a rate window. */
export const POLICY_RETRY_AFTER_MS = 1000;

/** A decision the failure policy stands behind: marked degraded, with the store's error. */
export function degrade(decision: Decision, error: SluiceError): Decision {
  return { ...decision, degraded: true, error };
}

/**
 * The answer of the allow/deny verdicts: every rule reported at full room (allow) or none (deny), so headers
 * stay well formed, with `reason: 'store_unavailable'` and `degraded: true`.
 */
export function failOpenOrClosed(verdict: 'allow' | 'deny', rules: readonly Rule[], now: number, error: SluiceError): Decision {
  const allowed = verdict === 'allow';
  const reports = rules.map((rule) => ({
    id: rule.id,
    allowed,
    limit: rule.limit,
    remaining: allowed ? rule.limit : 0,
    resetAt: now,
    retryAt: allowed ? now : now + POLICY_RETRY_AFTER_MS,
    windowMs: rule.windowMs,
  }));
  const first = reports[0]!;
  return {
    allowed,
    reason: 'store_unavailable',
    limit: first.limit,
    remaining: first.remaining,
    resetAt: now,
    retryAfter: allowed ? 0 : POLICY_RETRY_AFTER_MS,
    degraded: true,
    rule: first.id,
    rules: reports,
    now,
    error,
  };
}

/**
 * Fills `granted` / `startAt` on answers that did not come from the store's evaluation (limiter off, failure
 * policy): an allowed answer grants the whole cost and starts now; a denied one grants nothing and starts when
 * `retryAfter` says (-1 when never).
 */
export function withOperationFields(decision: Decision, request: LimitRequest): Decision {
  if (request.operation === 'take') {
    if (decision.granted !== undefined) return decision;
    return { ...decision, granted: decision.allowed ? request.cost : 0 };
  }
  if (request.operation !== 'reserve' || decision.startAt !== undefined) return decision;
  const wait = decision.allowed ? 0 : decision.retryAfter;
  return { ...decision, startAt: Number.isFinite(wait) ? decision.now + wait : NEVER };
}

export function disabled(rules: readonly Rule[], now: number): Decision {
  const first = rules[0]!;
  return {
    allowed: true,
    reason: 'disabled',
    limit: first.limit,
    remaining: first.limit,
    resetAt: now,
    retryAfter: 0,
    degraded: false,
    rule: first.id,
    rules: [],
    now,
  };
}
