import { fixedWindow, gcra, leakyBucket, slidingWindowCounter, slidingWindowLog, tokenBucket } from '@sluice/core';
import type { Vector } from './types.js';

/**
 * Compound rules are all-or-nothing: a request denied by one rule takes nothing from the others, and the
 * per-rule reports show the untouched rules as they were. The deciding rule is the one that denied (latest
 * retry) or, when all allow, the one with the least room.
 */
export const COMPOUND_VECTORS: Vector[] = [
  {
    title: 'compound: 2 per second and 3 per minute (fixed windows)',
    rules: () => [fixedWindow({ id: 'per-second', limit: 2, window: '1s' }), fixedWindow({ id: 'per-minute', limit: 3, window: '1m' })],
    steps: [
      { at: '0:00.100', expect: { allowed: true, remaining: 1, resetAt: '0:01', limit: 2, rule: 'per-second' } },
      { at: '0:00.200', expect: { allowed: true, remaining: 0, resetAt: '0:01', rule: 'per-second' } },
      {
        at: '0:00.300',
        expect: {
          allowed: false,
          remaining: 0,
          resetAt: '0:01',
          retryAfter: 700,
          rule: 'per-second',
          rules: { 'per-second': { allowed: false, remaining: 0 }, 'per-minute': { allowed: true, remaining: 1 } },
        },
      },
      { at: '0:01.500', expect: { allowed: true, remaining: 0, resetAt: '1:00', limit: 3, rule: 'per-minute' } },
      {
        at: '0:01.600',
        expect: {
          allowed: false,
          remaining: 0,
          resetAt: '1:00',
          retryAfter: 58_400,
          rule: 'per-minute',
          rules: { 'per-second': { allowed: true, remaining: 1 }, 'per-minute': { allowed: false, remaining: 0 } },
        },
      },
      // Had the 0:01.600 denial consumed the per-second rule, it would now be out of room.
      {
        at: '0:01.700',
        expect: {
          allowed: false,
          remaining: 0,
          resetAt: '1:00',
          retryAfter: 58_300,
          rule: 'per-minute',
          rules: { 'per-second': { allowed: true, remaining: 1 }, 'per-minute': { allowed: false, remaining: 0 } },
        },
      },
      { at: '1:00', expect: { allowed: true, remaining: 1, resetAt: '1:01', rule: 'per-second' } },
    ],
  },
  {
    title: 'compound: token bucket burst of 5 (1 per second) and 6 per day (fixed window)',
    rules: () => [
      tokenBucket({ id: 'burst', capacity: 5, refillRate: 1, interval: '1s' }),
      fixedWindow({ id: 'daily', limit: 6, window: '1d' }),
    ],
    steps: [
      { at: '0:00', cost: 5, expect: { allowed: true, remaining: 0, resetAt: '0:05', limit: 5, rule: 'burst' } },
      { at: '0:00', expect: { allowed: false, remaining: 0, resetAt: '0:05', retryAfter: 1_000, rule: 'burst' } },
      // The burst rule has 2 tokens back and would allow; the daily rule denies, so none of the 2 is taken.
      {
        at: '0:02',
        cost: 2,
        expect: {
          allowed: false,
          remaining: 1,
          resetAt: '1440:00',
          retryAfter: 86_398_000,
          limit: 6,
          rule: 'daily',
          rules: { burst: { allowed: true, remaining: 2 }, daily: { allowed: false, remaining: 1 } },
        },
      },
      {
        at: '0:02',
        expect: {
          allowed: true,
          remaining: 0,
          resetAt: '1440:00',
          rule: 'daily',
          rules: { burst: { allowed: true, remaining: 1 }, daily: { allowed: true, remaining: 0 } },
        },
      },
      { at: '0:03', expect: { allowed: false, remaining: 0, resetAt: '1440:00', retryAfter: 86_397_000, rule: 'daily' } },
    ],
  },
  {
    // One instant: also runs on store-clock stores.
    title: 'compound: 10 per hour (fixed window) and a leaky bucket of 3, with an impossible cost and a refund',
    rules: () => [
      fixedWindow({ id: 'hourly', limit: 10, window: '1h' }),
      leakyBucket({ id: 'burst', capacity: 3, leakRate: 1, interval: '1h' }),
    ],
    steps: [
      {
        at: '30:00',
        cost: 4,
        expect: {
          allowed: false,
          reason: 'cost_exceeds_limit',
          remaining: 3,
          resetAt: '30:00',
          limit: 3,
          rule: 'burst',
          rules: { hourly: { allowed: true, remaining: 10 }, burst: { allowed: false, remaining: 3 } },
        },
      },
      {
        at: '30:00',
        cost: 3,
        expect: {
          allowed: true,
          remaining: 0,
          resetAt: '210:00',
          rule: 'burst',
          rules: { hourly: { allowed: true, remaining: 7 }, burst: { allowed: true, remaining: 0 } },
        },
      },
      {
        at: '30:00',
        expect: {
          allowed: false,
          remaining: 0,
          resetAt: '210:00',
          retryAfter: 3_600_000,
          rule: 'burst',
          rules: { hourly: { allowed: true, remaining: 7 }, burst: { allowed: false, remaining: 0 } },
        },
      },
      {
        at: '30:00',
        op: 'refund',
        cost: 2,
        expect: {
          allowed: true,
          remaining: 2,
          resetAt: '90:00',
          rule: 'burst',
          rules: { hourly: { allowed: true, remaining: 9 }, burst: { allowed: true, remaining: 2 } },
        },
      },
      {
        at: '30:00',
        cost: 2,
        expect: {
          allowed: true,
          remaining: 0,
          resetAt: '210:00',
          rule: 'burst',
          rules: { hourly: { allowed: true, remaining: 7 }, burst: { allowed: true, remaining: 0 } },
        },
      },
    ],
  },
  {
    title: 'compound: sliding log 4, GCRA 6 and sliding counter 5 per hour, all-or-nothing at one instant',
    rules: () => [
      slidingWindowLog({ id: 'log', limit: 4, window: '1h' }),
      gcra({ id: 'gcra', limit: 6, period: '1h' }),
      slidingWindowCounter({ id: 'counter', limit: 5, window: '1h' }),
    ],
    steps: [
      {
        at: '30:00',
        cost: 3,
        expect: {
          allowed: true,
          remaining: 1,
          resetAt: '90:00',
          limit: 4,
          rule: 'log',
          rules: { log: { allowed: true, remaining: 1 }, gcra: { allowed: true, remaining: 3 }, counter: { allowed: true, remaining: 2 } },
        },
      },
      {
        at: '30:00',
        cost: 2,
        expect: {
          allowed: false,
          remaining: 1,
          resetAt: '90:00',
          retryAfter: 3_600_000,
          rule: 'log',
          rules: { log: { allowed: false, remaining: 1 }, gcra: { allowed: true, remaining: 3 }, counter: { allowed: true, remaining: 2 } },
        },
      },
      {
        at: '30:00',
        expect: {
          allowed: true,
          remaining: 0,
          resetAt: '90:00',
          rule: 'log',
          rules: { log: { allowed: true, remaining: 0 }, gcra: { allowed: true, remaining: 2 }, counter: { allowed: true, remaining: 1 } },
        },
      },
      {
        at: '30:00',
        expect: {
          allowed: false,
          remaining: 0,
          resetAt: '90:00',
          retryAfter: 3_600_000,
          rule: 'log',
          rules: { log: { allowed: false, remaining: 0 }, gcra: { allowed: true, remaining: 2 }, counter: { allowed: true, remaining: 1 } },
        },
      },
    ],
  },
];
