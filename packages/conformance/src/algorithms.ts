import { fixedWindow, gcra, leakyBucket, slidingWindowCounter, slidingWindowLog, tokenBucket, type Rule } from '@sluice/core';

/** One rule per algorithm (both token bucket refills), parameterised for the generic property tests. */
export interface AlgorithmCase {
  readonly title: string;
  /**
   * A rule admitting `capacity` units at once that is full again after `windowMs`. `refill` caps how much the
   * continuous algorithms give back per window (default: all of it); a small one keeps huge capacities still
   * for a store-clock test that lasts a few ms.
   */
  readonly rule: (capacity: number, windowMs: number, refill?: number) => Rule;
}

export const ALGORITHMS: readonly AlgorithmCase[] = [
  { title: 'fixed window', rule: (capacity, windowMs) => fixedWindow({ limit: capacity, window: windowMs }) },
  { title: 'sliding window log', rule: (capacity, windowMs) => slidingWindowLog({ limit: capacity, window: windowMs }) },
  { title: 'sliding window counter', rule: (capacity, windowMs) => slidingWindowCounter({ limit: capacity, window: windowMs }) },
  {
    title: 'token bucket (smooth)',
    rule: (capacity, windowMs, refill = capacity) => tokenBucket({ capacity, refillRate: refill, interval: windowMs }),
  },
  {
    title: 'token bucket (interval)',
    rule: (capacity, windowMs, refill = capacity) => tokenBucket({ capacity, refillRate: refill, interval: windowMs, refill: 'interval' }),
  },
  {
    title: 'leaky bucket',
    rule: (capacity, windowMs, refill = capacity) => leakyBucket({ capacity, leakRate: refill, interval: windowMs }),
  },
  { title: 'GCRA', rule: (capacity, windowMs, refill = capacity) => gcra({ limit: refill, period: windowMs, burst: capacity }) },
];

export const HOUR = 3_600_000;
export const DAY = 86_400_000;
