/**
 * Token bucket. Holds up to `capacity` tokens and gains `refillRate` tokens every `intervalMs`; a request takes
 * `cost` tokens or is denied. A new identity starts with a full bucket.
 * - `smooth` refill (default) adds tokens continuously, to the millisecond, in exact integer arithmetic.
 *   Guarantee: admitted cost in any [t1, t2] <= capacity + refillRate × (t2 − t1) / intervalMs.
 * - `interval` refill adds `refillRate` tokens at each multiple of `intervalMs` since the epoch (the textbook
 *   "refilled at the top of the minute" bucket). Guarantee: admitted cost in any [t1, t2] <=
 *   capacity + refillRate × (number of refill instants in (t1, t2]).
 * Worst-case burst: `capacity` at once. Memory: two integers per identity.
 * State (smooth): [level × intervalMs, lastMs, intervalMs]. State (interval): [tokens, lastMs].
 * Carry-over when the rule is changed at run time (same id): the level is kept in tokens (rescaled to a new
 * interval, rounded down; clamped to a new capacity); the interval refill counts the new interval's refill
 * instants after the last decision.
 */
import {
  NEVER,
  approach,
  ceilDiv,
  newStepScratch,
  rescale,
  setPair,
  setTriple,
  type StepOperation,
  type State,
  type StepOutcome,
  type StepScratch,
} from './algorithm.js';
import type { Duration } from '../shared/duration.js';
import { describe } from '../shared/describe.js';
import { SluiceError } from '../shared/errors.js';
import { readRuleOptions, type RuleBaseOptions } from './rule-options.js';
import type { TokenBucketParams, Rule } from './rule-types.js';
import { boundedProduct, positiveInteger } from '../shared/validate.js';

export type { TokenBucketParams } from './rule-types.js';

export function tokenBucketStep(
  state: State | undefined,
  now: number,
  cost: number,
  operation: StepOperation,
  params: TokenBucketParams,
): StepOutcome {
  const out = newStepScratch();
  tokenBucketInto(state, now, cost, operation, params, out);
  return out;
}

/** The token bucket's one implementation, writing into a caller's scratch (`stepRuleInto`, the in-process stores' allocation-free path); `tokenBucketStep` is it with a fresh scratch. */
export function tokenBucketInto(
  state: State | undefined,
  now: number,
  cost: number,
  operation: StepOperation,
  params: TokenBucketParams,
  out: StepScratch,
): void {
  if (params.refill === 1) intervalStep(state, now, cost, operation, params, out);
  else smoothStep(state, now, cost, operation, params, out);
}

function smoothStep(
  state: State | undefined,
  now: number,
  cost: number,
  operation: StepOperation,
  p: TokenBucketParams,
  out: StepScratch,
): void {
  // Levels are kept in scaled units (tokens × intervalMs) so that refill per millisecond is the integer refillRate.
  const interval = p.intervalMs;
  const rate = p.refillRate;
  const full = p.capacity * interval;
  let level = full;
  let t = now;
  if (state !== undefined) {
    const last = state[1]!;
    if (last > now) t = last;
    const scale = state[2];
    const stored = scale === undefined || scale === interval ? state[0]! : rescale(state[0]!, scale, interval);
    if (stored < full) level = approach(stored, full, t - last, rate, true);
  }
  const need = cost * interval;
  let allowed = true;
  let retryAt = now;
  if (operation === 'refund') {
    level = Math.min(full, level + need);
  } else {
    allowed = cost === 0 || level >= need;
    if (allowed && operation === 'consume') level -= need;
    if (!allowed) retryAt = cost > p.capacity ? NEVER : t + ceilDiv(need - level, rate);
  }
  // A full bucket (the common case for a quiet identity) needs neither division.
  const resetAt = level === full ? t : t + ceilDiv(full - level, rate);
  out.allowed = allowed;
  setTriple(out.next, level, t, interval);
  out.remaining = level === full ? p.capacity : Math.floor(level / interval);
  out.resetAt = resetAt;
  out.retryAt = retryAt;
  out.ttlMs = resetAt - now;
}

function intervalStep(
  state: State | undefined,
  now: number,
  cost: number,
  operation: StepOperation,
  p: TokenBucketParams,
  out: StepScratch,
): void {
  let tick = Math.floor(now / p.intervalMs);
  let tokens = p.capacity;
  let last = now;
  if (state !== undefined) {
    last = Math.max(now, state[1]!);
    const lastTick = Math.floor(state[1]! / p.intervalMs);
    tokens = Math.min(state[0]!, p.capacity);
    if (tick <= lastTick) tick = lastTick;
    else tokens = approach(tokens, p.capacity, tick - lastTick, p.refillRate, true);
  }
  let allowed = true;
  let retryAt = now;
  if (operation === 'refund') {
    tokens = Math.min(p.capacity, tokens + cost);
  } else {
    allowed = cost === 0 || tokens >= cost;
    if (allowed && operation === 'consume') tokens -= cost;
    if (!allowed) retryAt = cost > p.capacity ? NEVER : (tick + ceilDiv(cost - tokens, p.refillRate)) * p.intervalMs;
  }
  const resetAt =
    tokens >= p.capacity ? Math.max(now, tick * p.intervalMs) : (tick + ceilDiv(p.capacity - tokens, p.refillRate)) * p.intervalMs;
  out.allowed = allowed;
  setPair(out.next, tokens, last);
  out.remaining = tokens;
  out.resetAt = resetAt;
  out.retryAt = retryAt;
  // Kept until the last decision's time too (a clock that stepped back), so an expired state is exactly none.
  out.ttlMs = Math.max(resetAt, last) - now;
}

export interface TokenBucketOptions extends RuleBaseOptions {
  /** Most tokens the bucket holds: the largest burst. */
  capacity: number;
  /** Tokens added per `interval`. */
  refillRate: number;
  /** @default '1s' */
  interval?: Duration;
  /** `'smooth'` adds tokens continuously; `'interval'` adds `refillRate` at each interval boundary. @default 'smooth' */
  refill?: 'smooth' | 'interval';
}

/**
 * @example tokenBucket({ capacity: 20, refillRate: 10, interval: '1s' }) // 10/s, bursts of 20
 */
export function tokenBucket(options: TokenBucketOptions): Rule {
  const read = readRuleOptions(options, 'tokenBucket', ['capacity', 'refillRate', 'interval', 'refill']);
  const capacity = positiveInteger(options.capacity, 'tokenBucket: capacity');
  const refillRate = positiveInteger(options.refillRate, 'tokenBucket: refillRate');
  const intervalMs = read.duration('interval', '1s');
  const refill = options.refill ?? 'smooth';
  if (refill !== 'smooth' && refill !== 'interval') {
    throw new SluiceError('INVALID_OPTION', `tokenBucket: refill must be 'smooth' or 'interval', got ${describe(refill)}`);
  }
  boundedProduct(capacity, intervalMs, 'tokenBucket: capacity × interval');
  const windowMs = refill === 'smooth' ? ceilDiv(capacity * intervalMs, refillRate) : ceilDiv(capacity, refillRate) * intervalMs;
  return {
    id: read.id(refill === 'smooth' ? 'tb' : 'tbi'),
    algorithm: 'token-bucket',
    params: { capacity, refillRate, intervalMs, refill: refill === 'smooth' ? 0 : 1 },
    limit: capacity,
    windowMs,
    stagger: false,
  };
}
