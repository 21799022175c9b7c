import type { ResolvedRule } from '@sluice/core/store';

/**
 * When units taken from the remote store at `remoteNow` stop being safe to spend, or to give back, for these rules
 * (remote clock, epoch ms; Infinity for never):
 * - fixed window: the end of the window they were counted in. Spent later, a unit counted in one window would be
 *   admitted in the next (that window would admit limit + the unit). Such units are never given back either: a
 *   refund that ran after the window ended would lower the next window's count instead.
 * - token bucket, leaky bucket, GCRA: never. Every unit spent was in the shared bucket when it was taken, and a
 *   refund puts back units nobody spent (the bucket's own cap still applies).
 * The sliding windows are not leasable at all (see `leasable`).
 */
export function leaseDeadline(rules: readonly ResolvedRule[], remoteNow: number): number {
  let deadline = Number.POSITIVE_INFINITY;
  for (const rule of rules) {
    if (rule.algorithm !== 'fixed-window') continue;
    const end = windowStart(rule, remoteNow) + (rule.params as { windowMs: number }).windowMs;
    if (end < deadline) deadline = end;
  }
  return deadline;
}

/** Where the fixed window of `rule` that holds `now` began (the rule's own clock). */
export function windowStart(rule: ResolvedRule, now: number): number {
  const { windowMs, offsetMs } = rule.params as { windowMs: number; offsetMs: number };
  return Math.floor((now - offsetMs) / windowMs) * windowMs + offsetMs;
}

/**
 * Whether units may be taken ahead of use for these rules. A sliding window dates each unit by when it was
 * counted and forgets it a window later: a unit taken at t and spent at t' > t would be forgotten at t + window,
 * while the request it admitted is still inside the window, so the fleet could admit more than the limit.
 */
export function leasable(rules: readonly ResolvedRule[]): boolean {
  for (const rule of rules) {
    if (rule.algorithm === 'sliding-window-log' || rule.algorithm === 'sliding-window-counter') return false;
  }
  return true;
}
