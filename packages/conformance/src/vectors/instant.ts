import { fixedWindow, gcra, leakyBucket, slidingWindowCounter, slidingWindowLog, tokenBucket, type Rule } from '@sluice/core';
import type { Expected, Vector } from './types.js';

/**
 * Every algorithm at 5 per hour, driven at one instant (FAKE_EPOCH+30:00, in the middle of an hourly window), where all of
 * them behave as a counter of 5: the allowed/remaining/reason column is shared, and the resetAt/retryAfter columns
 * are each algorithm's own, computed by hand from its definition (H = 3,600,000 ms; one unit refills in H/5 =
 * 720,000 ms for the continuous algorithms).
 */
const AT = '30:00';

interface Row {
  op: 'limit' | 'peek' | 'refund';
  cost: number;
  expect: Pick<Expected, 'allowed' | 'remaining' | 'reason'>;
}

const ROWS: Row[] = [
  { op: 'limit', cost: 1, expect: { allowed: true, remaining: 4 } },
  { op: 'limit', cost: 2, expect: { allowed: true, remaining: 2 } },
  { op: 'peek', cost: 2, expect: { allowed: true, remaining: 2 } },
  { op: 'limit', cost: 3, expect: { allowed: false, remaining: 2 } },
  { op: 'limit', cost: 2, expect: { allowed: true, remaining: 0 } },
  { op: 'limit', cost: 1, expect: { allowed: false, remaining: 0 } },
  { op: 'limit', cost: 6, expect: { allowed: false, remaining: 0, reason: 'cost_exceeds_limit' } },
  { op: 'refund', cost: 1, expect: { allowed: true, remaining: 1 } },
  { op: 'limit', cost: 0, expect: { allowed: true, remaining: 1 } },
  { op: 'limit', cost: 1, expect: { allowed: true, remaining: 0 } },
  { op: 'peek', cost: 1, expect: { allowed: false, remaining: 0 } },
];

interface Column {
  title: string;
  rule: () => Rule;
  /** resetAt per row, as clock readings after FAKE_EPOCH. */
  resetAt: string[];
  /** retryAfter (ms) of the three rate_limited rows: 4, 6 and 11. */
  retryAfter: number;
}

const continuous = ['42:00', '66:00', '66:00', '66:00', '90:00', '90:00', '90:00', '78:00', '78:00', '90:00', '90:00'];

const COLUMNS: Column[] = [
  {
    title: 'fixed window',
    rule: () => fixedWindow({ limit: 5, window: '1h' }),
    resetAt: Array<string>(11).fill('60:00'),
    retryAfter: 1_800_000,
  },
  {
    title: 'sliding window log',
    rule: () => slidingWindowLog({ limit: 5, window: '1h' }),
    resetAt: Array<string>(11).fill('90:00'),
    retryAfter: 3_600_000,
  },
  {
    // resetAt = next window start + floor(H × (current − 1) / current) + 1; retry at FAKE_EPOCH+60:00.001, when the
    // weighted previous window (5 or 3) first rounds down far enough.
    title: 'sliding window counter',
    rule: () => slidingWindowCounter({ limit: 5, window: '1h' }),
    resetAt: [
      '60:00.001',
      '100:00.001',
      '100:00.001',
      '100:00.001',
      '108:00.001',
      '108:00.001',
      '108:00.001',
      '105:00.001',
      '105:00.001',
      '108:00.001',
      '108:00.001',
    ],
    retryAfter: 1_800_001,
  },
  {
    title: 'token bucket (smooth)',
    rule: () => tokenBucket({ capacity: 5, refillRate: 5, interval: '1h' }),
    resetAt: continuous,
    retryAfter: 720_000,
  },
  {
    title: 'token bucket (interval)',
    rule: () => tokenBucket({ capacity: 5, refillRate: 5, interval: '1h', refill: 'interval' }),
    resetAt: Array<string>(11).fill('60:00'),
    retryAfter: 1_800_000,
  },
  {
    title: 'leaky bucket',
    rule: () => leakyBucket({ capacity: 5, leakRate: 5, interval: '1h' }),
    resetAt: continuous,
    retryAfter: 720_000,
  },
  {
    title: 'GCRA',
    rule: () => gcra({ limit: 5, period: '1h' }),
    resetAt: continuous,
    retryAfter: 720_000,
  },
];

export const INSTANT_VECTORS: Vector[] = COLUMNS.map((column) => ({
  title: `${column.title}: 5 per hour at one instant`,
  rules: column.rule,
  steps: ROWS.map((row, i) => ({
    at: AT,
    op: row.op,
    cost: row.cost,
    expect: {
      ...row.expect,
      limit: 5,
      resetAt: column.resetAt[i]!,
      ...(row.expect.allowed || row.expect.reason !== undefined ? {} : { retryAfter: column.retryAfter }),
    },
  })),
}));
