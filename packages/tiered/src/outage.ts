/**
 * The remote store's outages as one instance sees them, and the local share that answers during them: each
 * instance limits on its share of every limit (limit ÷ instances) where that cannot take the fleet over the limit,
 * and refuses (degraded) where it could. See "When the shared store fails" in the package README.
 */
import { SluiceError } from '@sluice/core';
import type { LimitRequest, LimitResult, ResolvedRule, RuleOutcome } from '@sluice/core/store';
import type { TierStats } from './entry.js';
import type { LocalShare } from './local-share.js';
import { windowStart } from './rule-windows.js';

/** How far apart the instances of a fleet come back from one outage, at most: see `recovering`. */
const RECOVERY_SPREAD_MS = 1000;

/** Outages remembered after they end, at most (the oldest goes first). */
const MAX_ENDED = 8;

/** A degraded answer's reason while the share finishes the window an outage ended in. */
const RECOVERING = new SluiceError(
  'STORE_ERROR',
  'tieredStore: the remote store answers again; this fixed window, begun during the outage, is finished on the local share',
);

export class Outage {
  /** Tier clock: the first and the latest connection error of the remote store's current outage; undefined while it answers. */
  private failingSince: number | undefined;
  private lastErrorAt = Number.NEGATIVE_INFINITY;
  /**
   * Tier clock: the outages that ended lately, each its first connection error and the answer that ended it. A
   * second, short outage while the share finishes a window after the first must not cut that window short: each
   * outage is kept until no window it guards can still be open.
   */
  private ended: Array<{ since: number; until: number }> = [];

  constructor(
    private readonly share: LocalShare,
    private readonly clock: () => number,
    private readonly counters: TierStats,
  ) {}

  /**
   * The caller's request decided on this instance's share of the limit (limit ÷ instances), marked with why the
   * remote store did not answer, where that cannot take the fleet over the limit; otherwise a degraded refusal.
   * The share answers in a fixed window only when every instance is on its share there too: the outage began before
   * the window did (in the window an outage begins, the remote store may already have admitted the whole limit),
   * and the remote store refused a connection since the window began (an instance whose breaker is merely open may
   * be the only one not to have recovered). A timeout is no outage: the store may be slow only for this instance,
   * and the call may still run there.
   */
  answer(request: LimitRequest, error: SluiceError): LimitResult {
    // A share's answer while it finishes a window (a call that waited on another's batch gets it) is no connection
    // error: read as one, it would start an outage that never was, and move the windows the share finishes.
    if (error === RECOVERING) return this.finishing(request);
    const now = this.clock();
    if (error.code === 'STORE_ERROR') {
      this.failingSince ??= now;
      this.lastErrorAt = now;
    }
    const since = this.failingSince;
    const closed = since === undefined ? now : this.closedUntil(request.rules, now, since);
    if (closed === undefined) return this.shared(request, error);
    this.counters.degraded++;
    const until = request.now + (closed - now);
    return { now: request.now, outcomes: request.rules.map((rule) => refusedUntil(rule, until)), error };
  }

  /** An answer from the remote store: the outage, if one was going on, is over. */
  answered(): void {
    if (this.failingSince !== undefined) {
      if (this.ended.length === MAX_ENDED) this.ended.shift();
      this.ended.push({ since: this.failingSince, until: this.clock() });
      this.failingSince = undefined;
    }
  }

  /**
   * Whether the share still decides these rules after an outage: the fixed window the outage ended in, if the
   * outage began before it, is finished on the share, and so is the window that holds the next RECOVERY_SPREAD_MS:
   * the other instances spent it on their shares too (the remote store, perhaps restarted empty, never counted
   * those admissions), and they come back one by one, each when its client reconnects and its breaker's cooldown
   * ends.
   */
  recovering(request: LimitRequest): boolean {
    if (this.ended.length === 0) return false;
    const now = this.clock();
    let fixed = false;
    for (const rule of request.rules) {
      if (rule.algorithm !== 'fixed-window') continue;
      fixed = true;
      const windowMs = (rule.params as { windowMs: number }).windowMs;
      for (const { since, until } of this.ended) {
        if (since < windowStart(rule, until) && now < windowStart(rule, until + RECOVERY_SPREAD_MS) + windowMs) return true;
      }
    }
    if (fixed) while (this.ended.length > 0 && now - this.ended[0]!.until > 2 * RECOVERY_SPREAD_MS + 86_400_000) this.ended.shift();
    return false;
  }

  /** The share's answer while it finishes a window after an outage (see `recovering`). */
  finishing(request: LimitRequest): LimitResult {
    return this.shared(request, RECOVERING);
  }

  private shared(request: LimitRequest, error: SluiceError): LimitResult {
    this.counters.degraded++;
    return { ...this.share.limit(request), error };
  }

  /**
   * When the share may not answer these rules (see `answer`), the end of the window (tier clock) that forbids it;
   * the current time when no window forbids it but no connection error was seen in it; undefined when it may.
   */
  private closedUntil(rules: readonly ResolvedRule[], now: number, since: number): number | undefined {
    let until: number | undefined;
    for (const rule of rules) {
      if (rule.algorithm !== 'fixed-window') continue;
      const start = windowStart(rule, now);
      const end = start + (rule.params as { windowMs: number }).windowMs;
      if (start <= since) until = Math.max(until ?? end, end);
      else if (this.lastErrorAt < start) until ??= now;
    }
    return until;
  }
}

/** A refusal of one rule until `until` (the request's clock): the window an outage began in. */
function refusedUntil(rule: ResolvedRule, until: number): RuleOutcome {
  return { id: rule.id, allowed: false, limit: rule.limit, remaining: 0, resetAt: until, retryAt: until };
}
