/**
 * The `lease` strategy: a batch of units taken from the remote store ahead of use (a sixteenth of the smallest
 * limit), spent from process memory while the remote store's window that counted them is open, and given back
 * where no fixed window dates them. Over-admission is impossible by construction: see `Lease.spendBefore`.
 */
import { FailureAnswer, type LimitRequest, type LimitResult, type MemoryAnswer, type ResolvedRule } from '@sluice/core/store';
import { denied, remember, withoutModeFields } from './deny-cache.js';
import type { Entry, Lease, TierStats } from './entry.js';
import type { ResolvedOptions } from './options.js';
import type { Outage } from './outage.js';
import type { Remote } from './remote.js';
import { leaseDeadline } from './rule-windows.js';

/** What a strategy needs of the tier around it. */
export interface TierHost {
  /** One remote decision for the caller's request (under the policy; the share answers a failure). */
  decideRemotely(request: LimitRequest, entry: Entry): LimitResult | Promise<LimitResult>;
  /** Runs work in the background: never rejects unhandled, and close() (or the platform's waitUntil) waits for it. */
  background(work: Promise<unknown> | undefined): void;
}

export class Leases {
  constructor(
    private readonly remote: Remote,
    private readonly outage: Outage,
    private readonly options: ResolvedOptions,
    private readonly counters: TierStats,
    private readonly host: TierHost,
  ) {}

  leased(entry: Entry, request: LimitRequest): LimitResult | Promise<LimitResult> {
    const now = this.spend(entry, request);
    if (now !== undefined) return this.leaseAnswer(request, entry.lease!, now);
    // Another call is fetching a batch for this identity: wait for it rather than fetch a second one.
    // If that fetch failed, the remote store is down: the share answers at once rather than a second remote call
    // (two calls in a row could outlast the limiter's own deadline).
    if (entry.fetching !== undefined) {
      if (request.cost === 1) entry.waiting++;
      return entry.fetching.then((result) =>
        result.error !== undefined ? this.outage.answer(request, result.error) : this.afterSharedFetch(entry, request),
      );
    }
    // A cost above one is decided remotely, exactly; batches serve the usual cost of 1.
    if (request.cost !== 1) return this.host.decideRemotely(request, entry);
    entry.waiting = 0;
    const fetch = this.fetch(entry, request);
    entry.fetching = fetch;
    return fetch.finally(() => {
      if (entry.fetching === fetch) entry.fetching = undefined;
    });
  }

  /** After waiting for another call's batch: the deny cache first (the batch may have come back empty), then the lease. */
  private afterSharedFetch(entry: Entry, request: LimitRequest): LimitResult | Promise<LimitResult> {
    return denied(entry, request, this.remote.offset, this.counters) ?? this.leased(entry, request);
  }

  /**
   * Takes a batch (a sixteenth of the smallest limit, or one unit for each request waiting for it if more, at most
   * maxBatch; fewer if less is left), spends one unit of it on this request and keeps the rest until its window
   * ends or its ttl passes.
   *
   * The take is sent one microtask later, so that the requests that waited on the previous batch and found it spent
   * (they resume together, in the microtasks already queued) are counted first: one take serves them all, instead
   * of one take each after the other, a chain of round trips that could outlast the limiter's deadline. They spend
   * their units as soon as it answers, so what is left unspent is still less than a sixteenth of the limit.
   */
  private async fetch(entry: Entry, request: LimitRequest): Promise<LimitResult> {
    await undefined;
    const sentAt = this.options.clock();
    const take: LimitRequest = {
      key: request.key,
      rules: request.rules,
      cost: Math.min(this.options.maxBatch, Math.max(this.batchSize(request.rules), entry.waiting + 1)),
      operation: 'take',
      now: request.now,
    };
    const answer = await this.remote.run(take);
    if (answer instanceof FailureAnswer) return this.outage.answer(request, answer.error);
    this.remote.observe(request, answer);
    // A batch taken while the share finishes a window lapses unspent (see settled()).
    if (this.outage.recovering(request)) return this.outage.finishing(request);
    const granted = answer.outcomes[0]?.granted ?? 0;
    const outcomes = answer.outcomes.map(withoutModeFields);
    if (granted === 0) {
      // Nothing fits: the take's outcomes are those of a one-unit peek, a refusal to remember (the window is spent).
      const refusal = { now: answer.now, outcomes };
      remember(entry, 1, refusal);
      return refusal;
    }
    this.counters.leasedUnits += granted;
    const deadline = leaseDeadline(request.rules, answer.now);
    const returnable = deadline === Number.POSITIVE_INFINITY;
    const lease: Lease = {
      balance: granted - 1,
      // The window's end as the remote store saw it when it ran the take, counted from before the take was sent.
      spendBefore: sentAt + Math.min(this.options.leaseTtlMs, deadline - answer.now),
      returnable,
      remaining: outcomes.map((o) => o.remaining),
      resetAt: outcomes.map((o) => o.resetAt),
      takenAt: answer.now,
    };
    entry.lease = lease;
    return { now: answer.now, outcomes: outcomes.map((o) => ({ ...o, remaining: Math.min(o.limit, o.remaining + lease.balance) })) };
  }

  /** A sixteenth of the smallest limit, at least 1, at most maxBatch: held unspent, at most this many per instance. */
  private batchSize(rules: readonly ResolvedRule[]): number {
    let least = Number.POSITIVE_INFINITY;
    for (const rule of rules) if (rule.limit < least) least = rule.limit;
    return Math.max(1, Math.min(this.options.maxBatch, Math.floor(least / 16)));
  }

  /** `leased` for a single-rule request (core's memory path) the lease answers, written into `out`: false when it cannot. */
  leasedInto(entry: Entry, request: LimitRequest, out: MemoryAnswer): boolean {
    const now = this.spend(entry, request);
    if (now === undefined) return false;
    const lease = entry.lease!;
    const limit = request.rules[0]!.limit;
    out.allowed = true;
    out.remaining = Math.min(limit, (lease.remaining[0] ?? 0) + lease.balance);
    out.resetAt = Math.max(now, lease.resetAt[0] ?? now);
    out.retryAt = now;
    out.now = now;
    return true;
  }

  /**
   * Spends the request's cost from the identity's lease, if it holds that many and may still spend them (a lease past
   * its time goes back first): the time to stamp the answer with, or undefined when the lease cannot answer.
   */
  private spend(entry: Entry, request: LimitRequest): number | undefined {
    let lease = entry.lease;
    if (lease !== undefined && this.options.clock() >= lease.spendBefore) {
      this.host.background(this.release(entry));
      lease = undefined;
    }
    if (lease === undefined || lease.balance < request.cost) return undefined;
    lease.balance -= request.cost;
    this.counters.local++;
    // Never stamped before the take that counted the unit (the offset is shared by every identity and moves).
    return Math.max(request.now + this.remote.offset, lease.takenAt);
  }

  private leaseAnswer(request: LimitRequest, lease: Lease, now: number): LimitResult {
    const outcomes = request.rules.map((rule, i) => ({
      id: rule.id,
      allowed: true,
      limit: rule.limit,
      remaining: Math.min(rule.limit, (lease.remaining[i] ?? 0) + lease.balance),
      resetAt: Math.max(now, lease.resetAt[i] ?? now),
      retryAt: now,
    }));
    return { now, outcomes };
  }

  /**
   * Gives a lease's unspent units back where no fixed window dates them. Units of a fixed window are never given
   * back: a refund that ran after the window ended would lower the next window's count, so they lapse with the
   * window instead (at most one batch per instance, unspent).
   */
  release(entry: Entry): Promise<void> | undefined {
    const lease = entry.lease;
    entry.lease = undefined;
    if (lease === undefined || lease.balance === 0) return undefined;
    const units = lease.balance;
    if (!lease.returnable) {
      this.counters.lapsedUnits += units;
      return undefined;
    }
    const refund: LimitRequest = { key: entry.key, rules: entry.rules, cost: units, operation: 'refund', now: this.options.clock() };
    return Promise.resolve(this.remote.run(refund)).then((answer) => {
      if (answer instanceof FailureAnswer) this.counters.droppedUnits += units;
      else this.counters.returnedUnits += units;
    });
  }
}
