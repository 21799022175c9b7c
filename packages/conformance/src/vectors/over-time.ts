import { fixedWindow, gcra, leakyBucket, slidingWindowCounter, slidingWindowLog, tokenBucket } from '@sluice/core';
import type { Vector } from './types.js';

/** Each algorithm across refills, window edges, refunds and cost edges, on the fake clock. Values by hand. */
export const OVER_TIME_VECTORS: Vector[] = [
  {
    title: 'fixed window: 3 per minute, boundaries on the minute',
    rules: () => fixedWindow({ limit: 3, window: '1m' }),
    steps: [
      { at: '0:10', expect: { allowed: true, remaining: 2, resetAt: '1:00', limit: 3 } },
      { at: '0:20', cost: 2, expect: { allowed: true, remaining: 0, resetAt: '1:00' } },
      { at: '0:30', expect: { allowed: false, remaining: 0, resetAt: '1:00', retryAfter: 30_000 } },
      { at: '0:59.999', expect: { allowed: false, remaining: 0, resetAt: '1:00', retryAfter: 1 } },
      { at: '1:00', expect: { allowed: true, remaining: 2, resetAt: '2:00' } },
      // Fits in a fresh window only: 1 + 3 > 3 now.
      { at: '1:00', cost: 3, expect: { allowed: false, remaining: 2, resetAt: '2:00', retryAfter: 60_000 } },
      { at: '1:00', cost: 4, expect: { allowed: false, remaining: 2, resetAt: '2:00', reason: 'cost_exceeds_limit' } },
      { at: '1:30', op: 'refund', expect: { allowed: true, remaining: 3 } },
      { at: '1:30', cost: 3, expect: { allowed: true, remaining: 0, resetAt: '2:00' } },
    ],
  },
  {
    // Stagger shifts each identity's boundaries by FNV-1a(identity) mod window: 4,244 ms for "bob" and 14,162 ms
    // for "carol". Pinned here because the offsets are part of the persisted contract: changing the hash would
    // move every client's window on upgrade.
    title: 'fixed window with stagger: 2 per minute, boundaries shifted per identity',
    rules: () => fixedWindow({ limit: 2, window: '1m', stagger: true }),
    steps: [
      { at: '0:05', identity: 'bob', cost: 2, expect: { allowed: true, remaining: 0, resetAt: '1:04.244' } },
      { at: '0:05', identity: 'carol', cost: 2, expect: { allowed: true, remaining: 0, resetAt: '0:14.162' } },
      { at: '0:15', identity: 'carol', expect: { allowed: true, remaining: 1, resetAt: '1:14.162' } },
      { at: '0:15', identity: 'bob', expect: { allowed: false, remaining: 0, resetAt: '1:04.244', retryAfter: 49_244 } },
      { at: '1:04.243', identity: 'bob', expect: { allowed: false, remaining: 0, resetAt: '1:04.244', retryAfter: 1 } },
      { at: '1:04.244', identity: 'bob', expect: { allowed: true, remaining: 1, resetAt: '2:04.244' } },
    ],
  },
  {
    title: 'sliding window log: 5 per 10 s with weighted costs and a refund',
    rules: () => slidingWindowLog({ limit: 5, window: '10s' }),
    steps: [
      { at: '0:00', cost: 3, expect: { allowed: true, remaining: 2, resetAt: '0:10', limit: 5 } },
      { at: '0:01', cost: 2, expect: { allowed: true, remaining: 0, resetAt: '0:11' } },
      // 1 fits once the 0:00 entry (3) leaves at 0:10; 4 only once both have left, at 0:11.
      { at: '0:02', cost: 1, expect: { allowed: false, remaining: 0, resetAt: '0:11', retryAfter: 8_000 } },
      { at: '0:02', cost: 4, expect: { allowed: false, remaining: 0, resetAt: '0:11', retryAfter: 9_000 } },
      // A refund takes back from the newest entry first: the 0:01 entry is gone.
      { at: '0:03', op: 'refund', cost: 2, expect: { allowed: true, remaining: 2, resetAt: '0:10' } },
      { at: '0:03', cost: 2, expect: { allowed: true, remaining: 0, resetAt: '0:13' } },
      { at: '0:10', cost: 3, expect: { allowed: true, remaining: 0, resetAt: '0:20' } },
      { at: '0:10', expect: { allowed: false, remaining: 0, resetAt: '0:20', retryAfter: 3_000 } },
    ],
  },
  {
    title: 'sliding window counter: 4 per 10 s across adjacent and skipped windows',
    rules: () => slidingWindowCounter({ limit: 4, window: '10s' }),
    steps: [
      { at: '0:09', cost: 4, expect: { allowed: true, remaining: 0, resetAt: '0:17.501', limit: 4 } },
      // Previous 4 weighted by 8/10: floor(3.2) = 3.
      { at: '0:12', expect: { allowed: true, remaining: 0, resetAt: '0:20.001' } },
      // 3 + 1 + 1 > 4 until floor(4 × (10 − e) / 10) <= 2, i.e. e >= 2.501 s.
      { at: '0:12', expect: { allowed: false, remaining: 0, resetAt: '0:20.001', retryAfter: 501 } },
      { at: '0:12.501', expect: { allowed: true, remaining: 0, resetAt: '0:25.001' } },
      // Two windows later the old counts weigh nothing.
      { at: '0:35', cost: 4, expect: { allowed: true, remaining: 0, resetAt: '0:47.501' } },
    ],
  },
  {
    title: 'token bucket (smooth): capacity 4, 2 per second, refilled to the millisecond',
    rules: () => tokenBucket({ capacity: 4, refillRate: 2, interval: '1s' }),
    steps: [
      { at: '0:00', expect: { allowed: true, remaining: 3, resetAt: '0:00.500', limit: 4 } },
      { at: '0:00', cost: 3, expect: { allowed: true, remaining: 0, resetAt: '0:02' } },
      { at: '0:00.100', expect: { allowed: false, remaining: 0, resetAt: '0:02', retryAfter: 400 } },
      { at: '0:00.500', expect: { allowed: true, remaining: 0, resetAt: '0:02.500' } },
      { at: '0:01.250', op: 'peek', expect: { allowed: true, remaining: 1, resetAt: '0:02.500' } },
      { at: '0:01.250', cost: 2, expect: { allowed: false, remaining: 1, resetAt: '0:02.500', retryAfter: 250 } },
      { at: '0:01.250', op: 'refund', expect: { allowed: true, remaining: 2, resetAt: '0:02' } },
      { at: '0:10', cost: 4, expect: { allowed: true, remaining: 0, resetAt: '0:12' } },
      { at: '0:10', cost: 5, expect: { allowed: false, remaining: 0, resetAt: '0:12', reason: 'cost_exceeds_limit' } },
    ],
  },
  {
    title: 'leaky bucket: capacity 4, draining 1 per second',
    rules: () => leakyBucket({ capacity: 4, leakRate: 1, interval: '1s' }),
    steps: [
      { at: '0:00', cost: 4, expect: { allowed: true, remaining: 0, resetAt: '0:04', limit: 4 } },
      { at: '0:00', expect: { allowed: false, remaining: 0, resetAt: '0:04', retryAfter: 1_000 } },
      { at: '0:01.500', expect: { allowed: true, remaining: 0, resetAt: '0:05' } },
      { at: '0:01.500', expect: { allowed: false, remaining: 0, resetAt: '0:05', retryAfter: 500 } },
      { at: '0:03', op: 'peek', cost: 2, expect: { allowed: true, remaining: 2, resetAt: '0:05' } },
      { at: '0:03', cost: 5, expect: { allowed: false, remaining: 2, resetAt: '0:05', reason: 'cost_exceeds_limit' } },
      { at: '0:03', op: 'refund', cost: 3, expect: { allowed: true, remaining: 4, resetAt: '0:03' } },
      { at: '0:03', cost: 4, expect: { allowed: true, remaining: 0, resetAt: '0:07' } },
    ],
  },
  {
    // Emission interval 500 ms, tolerance 1.5 s.
    title: 'GCRA: 2 per second, burst 3',
    rules: () => gcra({ limit: 2, period: '1s', burst: 3 }),
    steps: [
      { at: '0:00', expect: { allowed: true, remaining: 2, resetAt: '0:00.500', limit: 3 } },
      { at: '0:00', cost: 2, expect: { allowed: true, remaining: 0, resetAt: '0:01.500' } },
      { at: '0:00.100', expect: { allowed: false, remaining: 0, resetAt: '0:01.500', retryAfter: 400 } },
      { at: '0:00.500', expect: { allowed: true, remaining: 0, resetAt: '0:02' } },
      { at: '0:01', op: 'peek', expect: { allowed: true, remaining: 1, resetAt: '0:02' } },
      { at: '0:01', op: 'refund', cost: 2, expect: { allowed: true, remaining: 3, resetAt: '0:01' } },
      { at: '0:04', cost: 3, expect: { allowed: true, remaining: 0, resetAt: '0:05.500' } },
      { at: '0:04', cost: 4, expect: { allowed: false, remaining: 0, resetAt: '0:05.500', reason: 'cost_exceeds_limit' } },
    ],
  },
  {
    // 3 per millisecond: the emission interval is 1/3 ms, kept as whole ms plus a remainder in the state. A store
    // that rounds the remainder away admits the last request.
    title: 'GCRA: 3 per millisecond keeps sub-millisecond remainders',
    rules: () => gcra({ limit: 3, period: 1, burst: 3 }),
    steps: [
      { at: '0:00', cost: 3, expect: { allowed: true, remaining: 0, resetAt: '0:00.001' } },
      { at: '0:00', expect: { allowed: false, remaining: 0, resetAt: '0:00.001', retryAfter: 1 } },
      { at: '0:00.001', expect: { allowed: true, remaining: 2, resetAt: '0:00.002' } },
      { at: '0:00.001', expect: { allowed: true, remaining: 1, resetAt: '0:00.002' } },
      { at: '0:00.001', expect: { allowed: true, remaining: 0, resetAt: '0:00.002' } },
      { at: '0:00.001', expect: { allowed: false, remaining: 0, resetAt: '0:00.002', retryAfter: 1 } },
    ],
  },
];
