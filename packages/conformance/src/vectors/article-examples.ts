import { slidingWindowCounter, slidingWindowLog, tokenBucket } from '@sluice/core';
import type { Vector } from './types.js';

/**
 * The worked examples of the article 'Designing a rate limiter', replayed on a fake clock. Clock readings are the
 * article's; FAKE_EPOCH is the article's 0:00.
 */
export const ARTICLE_VECTORS: Vector[] = [
  {
    // Denied requests are not logged (sluice's log keeps admitted cost only), so 1:27 finds an empty window and is
    // admitted like in the article, with one unit to spare where the article's log would have none.
    title: 'worked example: sliding window log, 2 per minute (0:01 ok, 0:15 ok, 0:55 denied, 1:27 ok)',
    rules: () => slidingWindowLog({ limit: 2, window: '1m' }),
    steps: [
      { at: '0:01', expect: { allowed: true, remaining: 1, resetAt: '1:01', limit: 2 } },
      { at: '0:15', expect: { allowed: true, remaining: 0, resetAt: '1:15' } },
      // Free again when the 0:01 entry leaves the window, at 1:01.
      { at: '0:55', expect: { allowed: false, remaining: 0, resetAt: '1:15', retryAfter: 6_000 } },
      // The article's "top of the minute": the 0:01 entry is still inside (0:01, 1:01].
      { at: '1:00', op: 'peek', expect: { allowed: false, remaining: 0, resetAt: '1:15', retryAfter: 1_000 } },
      { at: '1:27', expect: { allowed: true, remaining: 1, resetAt: '2:27' } },
      { at: '1:28', expect: { allowed: true, remaining: 0, resetAt: '2:28' } },
      { at: '1:29', expect: { allowed: false, remaining: 0, resetAt: '2:28', retryAfter: 58_000 } },
    ],
  },
  {
    // Five requests in the previous minute and three in the current one, built by traffic; at 1:18 the weight of
    // the previous window is 70%: floor(5 × 0.7) + 3 = 6, so one more fits (7 of 7).
    title: 'worked example: sliding window counter, 7 per minute (previous 5, current 3, 1:18 allowed)',
    rules: () => slidingWindowCounter({ limit: 7, window: '1m' }),
    steps: [
      { at: '0:10', expect: { allowed: true, remaining: 6, resetAt: '1:00.001', limit: 7 } },
      { at: '0:20', expect: { allowed: true, remaining: 5, resetAt: '1:30.001' } },
      { at: '0:30', expect: { allowed: true, remaining: 4, resetAt: '1:40.001' } },
      { at: '0:40', expect: { allowed: true, remaining: 3, resetAt: '1:45.001' } },
      { at: '0:50', expect: { allowed: true, remaining: 2, resetAt: '1:48.001' } },
      // Current window: floor(5 × 55/60) = 4 weighted.
      { at: '1:05', expect: { allowed: true, remaining: 2, resetAt: '2:00.001' } },
      { at: '1:10', expect: { allowed: true, remaining: 1, resetAt: '2:30.001' } },
      { at: '1:15', expect: { allowed: true, remaining: 1, resetAt: '2:40.001' } },
      // The article's request: 3 current + floor(5 × 0.7) = 6 before it, 7 with it.
      { at: '1:18', expect: { allowed: true, remaining: 0, resetAt: '2:45.001' } },
      // 3 + 4 + 1 = 8 > 7. Fits once floor(5 × (60 − e) / 60) <= 2, i.e. e >= 24.001 s.
      { at: '1:18', expect: { allowed: false, remaining: 0, resetAt: '2:45.001', retryAfter: 6_001 } },
      { at: '1:24', op: 'peek', expect: { allowed: false, remaining: 0, resetAt: '2:45.001', retryAfter: 1 } },
      { at: '1:24.001', expect: { allowed: true, remaining: 0, resetAt: '2:48.001' } },
    ],
  },
  {
    // "A bucket size and refill rate of three": three tokens back at the top of every minute.
    title:
      'worked example: token bucket, capacity 3 refilled 3 per minute at the top of the minute (0:01, 0:15 ×2 ok, 0:58 denied, 1:00 ok)',
    rules: () => tokenBucket({ capacity: 3, refillRate: 3, interval: '1m', refill: 'interval' }),
    steps: [
      { at: '0:01', expect: { allowed: true, remaining: 2, resetAt: '1:00', limit: 3 } },
      { at: '0:15', expect: { allowed: true, remaining: 1, resetAt: '1:00' } },
      { at: '0:15', expect: { allowed: true, remaining: 0, resetAt: '1:00' } },
      { at: '0:58', expect: { allowed: false, remaining: 0, resetAt: '1:00', retryAfter: 2_000 } },
      { at: '1:00', expect: { allowed: true, remaining: 2, resetAt: '2:00' } },
      { at: '1:00', cost: 2, expect: { allowed: true, remaining: 0, resetAt: '2:00' } },
      { at: '1:30', expect: { allowed: false, remaining: 0, resetAt: '2:00', retryAfter: 30_000 } },
      // Four minutes of refills, capped at the capacity.
      { at: '5:00', cost: 3, expect: { allowed: true, remaining: 0, resetAt: '6:00' } },
    ],
  },
];
