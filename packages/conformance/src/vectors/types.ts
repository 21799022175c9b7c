import type { DecisionReason, Rule } from '@sluice/core';

/** What a step's decision must say. Times are clock readings after FAKE_EPOCH (`'1:00'`), waits are ms. */
export interface Expected {
  allowed: boolean;
  remaining: number;
  /** @default 'ok' when allowed, 'rate_limited' when not */
  reason?: DecisionReason;
  /** When the deciding rule is full again, as a clock reading after FAKE_EPOCH. Checked under a client clock. */
  resetAt?: string;
  /** ms until the same cost passes; 0 when allowed (implied), Infinity for cost_exceeds_limit (implied). */
  retryAfter?: number;
  /** The deciding rule's capacity. */
  limit?: number;
  /** The deciding rule's id. */
  rule?: string;
  /** Per-rule reports of a compound decision. */
  rules?: Record<string, { allowed: boolean; remaining: number }>;
}

export interface VectorStep {
  /** Clock reading after FAKE_EPOCH, e.g. `'0:55'` or `'1:24.001'`. */
  at: string;
  /** @default 'limit' */
  op?: 'limit' | 'peek' | 'refund' | 'reset';
  /** @default 'alice' */
  identity?: string;
  /** Omitted means the limiter's default cost of 1. */
  cost?: number;
  expect?: Expected;
}

/**
 * A concrete, hand-computed sequence. Vectors whose steps all share one `at` are time-independent (given windows
 * long enough that a few ms of real time change nothing) and also run against store-clock stores.
 */
export interface Vector {
  title: string;
  rules: () => Rule | Rule[];
  steps: VectorStep[];
}
