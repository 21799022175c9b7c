/**
 * Sliding window log. Keeps the time and cost of every admitted request for `windowMs`.
 * Guarantee: in every window (t - windowMs, t], admitted cost never exceeds `limit`; exact, no boundary burst.
 * Memory per identity grows with the admitted requests in one window (at most `limit` entries).
 * Denied requests are not logged, so a client that keeps hammering is admitted again as soon as its old
 * requests leave the window. State: [t1, c1, t2, c2, ...], ascending by time, one entry per millisecond.
 */
import { NEVER, type StepOperation, type State, type StepOutcome } from './algorithm.js';
import type { Duration } from '../shared/duration.js';
import { readRuleOptions, type RuleBaseOptions } from './rule-options.js';
import type { SlidingWindowLogParams, Rule } from './rule-types.js';
import { positiveInteger } from '../shared/validate.js';

export type { SlidingWindowLogParams } from './rule-types.js';

export function slidingWindowLogStep(
  state: State | undefined,
  now: number,
  cost: number,
  operation: StepOperation,
  params: SlidingWindowLogParams,
): StepOutcome {
  const { limit, windowMs } = params;
  const log = state ?? [];
  // Time never runs backwards within one log: a late clock is treated as the newest entry's time.
  const t = log.length > 0 ? Math.max(now, log[log.length - 2]!) : now;
  let first = 0;
  while (first < log.length && log[first]! + windowMs <= t) first += 2;
  const live = log.slice(first);
  let used = 0;
  for (let i = 1; i < live.length; i += 2) used += live[i]!;

  let allowed = true;
  let retryAt = now;
  if (operation === 'refund') {
    let left = cost;
    while (left > 0 && live.length > 0) {
      const last = live.length - 1;
      const take = Math.min(left, live[last]!);
      left -= take;
      used -= take;
      if (take === live[last]) live.length -= 2;
      else live[last] = live[last]! - take;
    }
  } else {
    allowed = cost === 0 || used + cost <= limit;
    if (allowed && operation === 'consume' && cost > 0) {
      if (live.length > 0 && live[live.length - 2] === t) live[live.length - 1] = live[live.length - 1]! + cost;
      else live.push(t, cost);
      used += cost;
    }
    if (!allowed) {
      retryAt = NEVER;
      if (cost <= limit) {
        let freed = 0;
        for (let i = 0; i < live.length; i += 2) {
          freed += live[i + 1]!;
          if (used - freed + cost <= limit) {
            retryAt = live[i]! + windowMs;
            break;
          }
        }
      }
    }
  }
  const resetAt = live.length > 0 ? live[live.length - 2]! + windowMs : t;
  return { allowed, next: live, remaining: Math.max(0, limit - used), resetAt, retryAt, ttlMs: resetAt - now };
}

export interface SlidingWindowLogOptions extends RuleBaseOptions {
  /** Cost units admitted in any window of this length. */
  limit: number;
  window: Duration;
}

/**
 * @example slidingWindowLog({ limit: 2, window: '1m' })
 */
export function slidingWindowLog(options: SlidingWindowLogOptions): Rule {
  const read = readRuleOptions(options, 'slidingWindowLog', ['limit', 'window']);
  const limit = positiveInteger(options.limit, 'slidingWindowLog: limit');
  const windowMs = read.duration('window');
  return { id: read.id(`swl:${windowMs}`), algorithm: 'sliding-window-log', params: { limit, windowMs }, limit, windowMs, stagger: false };
}
