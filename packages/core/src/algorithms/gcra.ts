/**
 * GCRA (generic cell rate algorithm). Stores one instant, the theoretical arrival time (TAT): when the
 * identity's allowance would be fully restored. Each admitted unit of cost pushes the TAT forward by the
 * emission interval periodMs / limit; a request passes when the pushed TAT is no more than burst × interval
 * ahead of now.
 * Guarantee: admitted cost in any [t1, t2] <= burst + limit × (t2 − t1) / periodMs; decisions equal a smooth
 * token bucket with capacity = burst and refillRate/interval = limit/period. Worst-case burst: `burst` at once.
 * Sub-millisecond exact: the TAT is kept as whole milliseconds plus a remainder in 1/limit ms, so rates above
 * one per millisecond lose nothing. Memory: three integers per identity. State: [tatMs, tatRemainder, limit]; a
 * rule changed at run time (same id) keeps its TAT, the remainder rescaled to the new limit (rounded up).
 */
import {
  NEVER,
  ceilDiv,
  newStepScratch,
  rescale,
  setTriple,
  type StepOperation,
  type State,
  type StepOutcome,
  type StepScratch,
} from './algorithm.js';
import type { Duration } from '../shared/duration.js';
import { readRuleOptions, type RuleBaseOptions } from './rule-options.js';
import type { GcraParams, Rule } from './rule-types.js';
import { boundedProduct, positiveInteger } from '../shared/validate.js';

export type { GcraParams } from './rule-types.js';

export function gcraStep(state: State | undefined, now: number, cost: number, operation: StepOperation, params: GcraParams): StepOutcome {
  const out = newStepScratch();
  gcraInto(state, now, cost, operation, params, out);
  return out;
}

/** GCRA's one implementation, writing into a caller's scratch (`stepRuleInto`); `gcraStep` is it with a fresh scratch. */
export function gcraInto(
  state: State | undefined,
  now: number,
  cost: number,
  operation: StepOperation,
  params: GcraParams,
  out: StepScratch,
): void {
  const { limit, periodMs, burst } = params;
  // Everything below is in units of 1/limit ms, where one unit of cost is exactly periodMs long.
  const tolerance = burst * periodMs;
  let ahead = 0; // max(TAT, now) − now
  if (state !== undefined && state[0]! >= now) {
    // Only a clock that ran backwards puts the TAT further ahead than the tolerance; capping keeps it in 2^53.
    const stored = state[2] ?? limit;
    const remainder = Math.min(limit - 1, rescale(state[1]!, stored, limit, true));
    ahead = Math.min(state[0]! - now, ceilDiv(tolerance, limit) + 1) * limit + remainder;
  }
  const spend = cost * periodMs;
  let allowed = true;
  let retryAt = now;
  if (operation === 'refund') {
    ahead = Math.max(0, ahead - spend);
  } else {
    allowed = cost === 0 || ahead + spend <= tolerance;
    if (allowed && operation === 'consume') ahead += spend;
    if (!allowed) retryAt = cost > burst ? NEVER : now + ceilDiv(ahead + spend - tolerance, limit);
  }
  const whole = Math.floor(ahead / limit);
  const resetAt = now + ceilDiv(ahead, limit);
  out.allowed = allowed;
  setTriple(out.next, now + whole, ahead - whole * limit, limit);
  out.remaining = Math.floor((tolerance - Math.min(ahead, tolerance)) / periodMs);
  out.resetAt = resetAt;
  out.retryAt = retryAt;
  out.ttlMs = resetAt - now;
}

export interface GcraOptions extends RuleBaseOptions {
  /** Cost units per `period` on average. */
  limit: number;
  period: Duration;
  /** Largest cost admitted at once. @default limit */
  burst?: number;
}

/**
 * @example gcra({ limit: 100, period: '1m', burst: 20 })
 */
export function gcra(options: GcraOptions): Rule {
  const read = readRuleOptions(options, 'gcra', ['limit', 'period', 'burst']);
  const limit = positiveInteger(options.limit, 'gcra: limit');
  const periodMs = read.duration('period');
  const burst = options.burst === undefined ? limit : positiveInteger(options.burst, 'gcra: burst');
  boundedProduct(burst + 2, periodMs, 'gcra: burst × period');
  boundedProduct(limit, periodMs, 'gcra: limit × period');
  return {
    id: read.id(`gcra:${periodMs}`),
    algorithm: 'gcra',
    params: { limit, periodMs, burst },
    limit: burst,
    windowMs: ceilDiv(burst * periodMs, limit),
    stagger: false,
  };
}
