/**
 * Sliding window counter. Two fixed-window counters (previous and current); the previous one is weighted by how
 * much of it the sliding window still covers: estimate = floor(previous × (windowMs − elapsed) / windowMs) + current.
 * A request passes when estimate + cost <= limit.
 * Guarantee: exact when traffic in the previous window was evenly spread; otherwise an approximation whose
 * worst case admits up to 2 × limit in one sliding window (everything at the very end of the previous window).
 * Memory: three integers per identity. State: [windowStart, previous, current].
 */
import { NEVER, newStepScratch, setTriple, type StepOperation, type State, type StepOutcome, type StepScratch } from './algorithm.js';
import type { Duration } from '../shared/duration.js';
import { readRuleOptions, type RuleBaseOptions } from './rule-options.js';
import type { SlidingWindowCounterParams, Rule } from './rule-types.js';
import { boundedProduct, positiveInteger } from '../shared/validate.js';

export type { SlidingWindowCounterParams } from './rule-types.js';

/** Smallest elapsed e in [0, windowMs] with floor(count × (windowMs − e) / windowMs) <= room. */
function decayedBy(count: number, room: number, windowMs: number): number {
  if (count <= room) return 0;
  return Math.floor((windowMs * (count - room - 1)) / count) + 1;
}

export function slidingWindowCounterStep(
  state: State | undefined,
  now: number,
  cost: number,
  operation: StepOperation,
  params: SlidingWindowCounterParams,
): StepOutcome {
  const out = newStepScratch();
  slidingWindowCounterInto(state, now, cost, operation, params, out);
  return out;
}

/** The sliding window counter's one implementation, writing into a caller's scratch (`stepRuleInto`); `slidingWindowCounterStep` is it with a fresh scratch. */
export function slidingWindowCounterInto(
  state: State | undefined,
  now: number,
  cost: number,
  operation: StepOperation,
  params: SlidingWindowCounterParams,
  out: StepScratch,
): void {
  const { limit, windowMs } = params;
  let start = Math.floor(now / windowMs) * windowMs;
  let previous = 0;
  let current = 0;
  let t = now;
  if (state !== undefined) {
    const storedStart = state[0]!;
    const storedPrevious = state[1]!;
    const storedCurrent = state[2]!;
    if (storedStart >= start) {
      // Same window, or a clock that went backwards: stay in the stored (newer) window at its start at the latest.
      if (storedStart > start) t = storedStart;
      start = storedStart;
      previous = storedPrevious;
      current = storedCurrent;
    } else if (storedStart + windowMs === start) {
      previous = storedCurrent;
    }
  }
  const elapsed = t - start;
  const weighted = Math.floor((previous * (windowMs - elapsed)) / windowMs);
  // A previous window that no longer weighs anything is forgotten, so that a state read after its expiry is
  // exactly no state (every executor relies on it: see store/store.ts), whatever the clock does next.
  if (weighted === 0) previous = 0;

  let allowed = true;
  let retryAt = now;
  if (operation === 'refund') {
    current = Math.max(0, current - cost);
  } else {
    allowed = cost === 0 || weighted + current + cost <= limit;
    if (allowed && operation === 'consume') current += cost;
    if (!allowed) {
      if (cost > limit) retryAt = NEVER;
      else if (current + cost <= limit) retryAt = start + decayedBy(previous, limit - current - cost, windowMs);
      else retryAt = start + windowMs + decayedBy(current, limit - cost, windowMs);
    }
  }
  const resetAt =
    current > 0
      ? start + windowMs + decayedBy(current, 0, windowMs)
      : previous > 0
        ? Math.max(t, start + decayedBy(previous, 0, windowMs))
        : t;
  out.allowed = allowed;
  setTriple(out.next, start, previous, current);
  out.remaining = Math.max(0, limit - weighted - current);
  out.resetAt = resetAt;
  out.retryAt = retryAt;
  out.ttlMs = resetAt - now;
}

export interface SlidingWindowCounterOptions extends RuleBaseOptions {
  /** Cost units admitted per (estimated) sliding window. */
  limit: number;
  window: Duration;
}

/**
 * @example slidingWindowCounter({ limit: 7, window: '1m' })
 */
export function slidingWindowCounter(options: SlidingWindowCounterOptions): Rule {
  const read = readRuleOptions(options, 'slidingWindowCounter', ['limit', 'window']);
  const limit = positiveInteger(options.limit, 'slidingWindowCounter: limit');
  const windowMs = read.duration('window');
  boundedProduct(limit, windowMs, 'slidingWindowCounter: limit × window');
  return {
    id: read.id(`swc:${windowMs}`),
    algorithm: 'sliding-window-counter',
    params: { limit, windowMs },
    limit,
    windowMs,
    stagger: false,
  };
}
