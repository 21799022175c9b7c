/**
 * Leaky bucket, as a meter. Each admitted request pours `cost` units into a bucket of `capacity`; the bucket
 * drains `leakRate` units every `intervalMs`, continuously. A request that would overflow is denied.
 * It is the mirror image of a smooth token bucket (level = capacity − tokens) and gives the same guarantee:
 * admitted cost in any [t1, t2] <= capacity + leakRate × (t2 − t1) / intervalMs. Pick it when you think in
 * terms of queue depth and outflow; `resetAt` is when the queue would be empty.
 * Worst-case burst: `capacity` at once. Memory: two integers per identity.
 * State: [level × intervalMs, lastMs, intervalMs]. A rule changed at run time (same id) keeps its level in units,
 * rescaled to a new interval (rounded up: never less queued than there was).
 */
import { NEVER, approach, ceilDiv, rescale, type StepOperation, type State, type StepOutcome } from './algorithm.js';
import type { Duration } from '../shared/duration.js';
import { readRuleOptions, type RuleBaseOptions } from './rule-options.js';
import type { LeakyBucketParams, Rule } from './rule-types.js';
import { boundedProduct, positiveInteger } from '../shared/validate.js';

export type { LeakyBucketParams } from './rule-types.js';

export function leakyBucketStep(
  state: State | undefined,
  now: number,
  cost: number,
  operation: StepOperation,
  params: LeakyBucketParams,
): StepOutcome {
  const { capacity, leakRate, intervalMs } = params;
  const brim = capacity * intervalMs;
  let level = 0;
  let t = now;
  if (state !== undefined) {
    const last = state[1]!;
    t = Math.max(now, last);
    level = approach(rescale(state[0]!, state[2] ?? intervalMs, intervalMs, true), 0, t - last, leakRate, false);
  }
  const pour = cost * intervalMs;
  let allowed = true;
  let retryAt = now;
  if (operation === 'refund') {
    level = Math.max(0, level - pour);
  } else {
    allowed = cost === 0 || level + pour <= brim;
    if (allowed && operation === 'consume') level += pour;
    if (!allowed) retryAt = cost > capacity ? NEVER : t + ceilDiv(level + pour - brim, leakRate);
  }
  const resetAt = t + ceilDiv(level, leakRate);
  return {
    allowed,
    next: [level, t, intervalMs],
    remaining: Math.floor((brim - level) / intervalMs),
    resetAt,
    retryAt,
    ttlMs: resetAt - now,
  };
}

export interface LeakyBucketOptions extends RuleBaseOptions {
  /** Most units the bucket holds before it overflows. */
  capacity: number;
  /** Units drained per `interval`. */
  leakRate: number;
  /** @default '1s' */
  interval?: Duration;
}

/**
 * @example leakyBucket({ capacity: 10, leakRate: 2, interval: '1s' })
 */
export function leakyBucket(options: LeakyBucketOptions): Rule {
  const read = readRuleOptions(options, 'leakyBucket', ['capacity', 'leakRate', 'interval']);
  const capacity = positiveInteger(options.capacity, 'leakyBucket: capacity');
  const leakRate = positiveInteger(options.leakRate, 'leakyBucket: leakRate');
  const intervalMs = read.duration('interval', '1s');
  boundedProduct(capacity, intervalMs, 'leakyBucket: capacity × interval');
  return {
    id: read.id('lb'),
    algorithm: 'leaky-bucket',
    params: { capacity, leakRate, intervalMs },
    limit: capacity,
    windowMs: ceilDiv(capacity * intervalMs, leakRate),
    stagger: false,
  };
}
