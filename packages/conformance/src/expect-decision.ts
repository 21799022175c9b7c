import type { Decision } from '@sluice/core';
import { expect } from 'vitest';
import { FAKE_EPOCH, clockOffset } from './time.js';
import type { Expected } from './vectors/types.js';

/**
 * Asserts a decision field by field. Under a store clock, `resetAt` and non-trivial `retryAfter` depend on the
 * store's own time and are covered by the model comparison instead; everything else is checked as written.
 */
export function expectDecision(decision: Decision, expected: Expected, clientClock: boolean, what: string): void {
  const reason = expected.reason ?? (expected.allowed ? 'ok' : 'rate_limited');
  const actual: Record<string, unknown> = { allowed: decision.allowed, reason: decision.reason, remaining: decision.remaining };
  const wanted: Record<string, unknown> = { allowed: expected.allowed, reason, remaining: expected.remaining };
  const retryAfter = expected.allowed ? 0 : reason === 'cost_exceeds_limit' ? Number.POSITIVE_INFINITY : expected.retryAfter;
  if (retryAfter !== undefined && (clientClock || retryAfter === 0 || retryAfter === Number.POSITIVE_INFINITY)) {
    actual.retryAfter = decision.retryAfter;
    wanted.retryAfter = retryAfter;
  }
  if (expected.resetAt !== undefined && clientClock) {
    actual.resetAt = `FAKE_EPOCH+${formatOffset(decision.resetAt - FAKE_EPOCH)}`;
    wanted.resetAt = `FAKE_EPOCH+${formatOffset(clockOffset(expected.resetAt))}`;
  }
  if (expected.limit !== undefined) {
    actual.limit = decision.limit;
    wanted.limit = expected.limit;
  }
  if (expected.rule !== undefined) {
    actual.rule = decision.rule;
    wanted.rule = expected.rule;
  }
  if (expected.rules !== undefined) {
    actual.rules = Object.fromEntries(decision.rules.map((r) => [r.id, { allowed: r.allowed, remaining: r.remaining }]));
    wanted.rules = expected.rules;
  }
  expect(actual, what).toEqual(wanted);
}

/** ms after FAKE_EPOCH as m:ss.mmm, so a wrong resetAt reads like the vector that states it. */
function formatOffset(ms: number): string {
  if (!Number.isFinite(ms)) return String(ms);
  const sign = ms < 0 ? '-' : '';
  const abs = Math.abs(ms);
  return `${sign}${Math.floor(abs / 60_000)}:${String(Math.floor((abs % 60_000) / 1000)).padStart(2, '0')}.${String(abs % 1000).padStart(3, '0')}`;
}
