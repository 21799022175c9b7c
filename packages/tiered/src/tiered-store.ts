import { SluiceError } from '@sluice/core';
import {
  Failover,
  NEVER,
  createFailurePolicy,
  isPromiseLike,
  type FailurePolicy,
  type LeaseRequest,
  type LeaseResult,
  type LimitRequest,
  type LimitResult,
  type ResolvedRule,
  type RuleOutcome,
  type Store,
  type StoreCapabilities,
  type StoreOperation,
} from '@sluice/core/store';
import { LRUCache } from 'lru-cache';
import { LocalShare } from './local-share.js';
import { resolveOptions, type ResolvedOptions, type TierStrategy, type TieredStoreOptions } from './options.js';
import { leasable, leaseDeadline } from './rule-windows.js';

/** Counters since the tier was built; `pnpm bench tiered` and the simulation read them. */
export interface TierStats {
  /** Decisions asked of the tier (consume, peek, refund, take, reserve). */
  decisions: number;
  /** Decisions answered from process memory, with no remote call. */
  local: number;
  /** Of those, refusals answered by the deny cache. */
  denyCacheHits: number;
  /** Calls made to the remote store (decisions, batch takes, flushes, lease returns). */
  remoteCalls: number;
  /** Answers given on the local share because the remote store failed or its circuit was open. */
  degraded: number;
  /** `lease`: units taken in batches, and units given back unspent. */
  leasedUnits: number;
  returnedUnits: number;
  /**
   * `lease`: unspent units of a fixed window, never given back (a refund that ran after the window ended would lower
   * the next window's count): they lapse with their window, whose budget ends with it anyway.
   */
  lapsedUnits: number;
  /** `lease`: unspent units whose return failed (the remote store was down): lost to the fleet until their window ends or their bucket refills. */
  droppedUnits: number;
  /** `async`: units counted remotely by flushes, and of those the ones the remote store had no room for (over-admission). */
  flushedUnits: number;
  overAdmittedUnits: number;
}

/** A refusal the remote store gave, replayed locally until `until` (remote clock) for costs of at least `cost`. */
interface Denial {
  cost: number;
  /** Whether a rule had room (a compound refusal): its retry time is rewritten to "now" on every replay. */
  mixed: boolean;
  /** Remote clock: when it was given. A clock that steps back before it asks the shared store again (retry times move with it). */
  at: number;
  until: number;
  outcomes: readonly RuleOutcome[];
}

/** `lease`: units taken from the remote store and not yet spent. */
interface Lease {
  balance: number;
  /**
   * Tier clock: spend no unit at or after this. It is the time the take was sent plus what the remote store said
   * was left of the fixed window when it ran the take (or the lease ttl): the take ran after it was sent, so this
   * is never after the window's real end, whatever the queueing delays were and whatever the clock offset is.
   */
  spendBefore: number;
  /** Whether unspent units may be given back: only where no fixed window dates them (buckets, GCRA). */
  returnable: boolean;
  /** Per rule, as the take left them: remaining after it, and reset time. */
  remaining: number[];
  resetAt: number[];
  /** Remote clock: when the take ran. Local answers are never stamped earlier. */
  takenAt: number;
}

/** `async`: units admitted locally and not yet counted remotely. */
interface Counts {
  /** Admitted, not yet sent. */
  unflushed: number;
  /** Sent in a flush that has not answered yet. */
  inflight: number;
  /** Cost of this instance's remote decisions in flight: not in `known` yet, so counted as if admitted. */
  deciding: number;
  /** Per rule, remaining as the remote store last reported it (undefined: never asked). */
  known: number[] | undefined;
  /** Remote clock: when `known` was reported. Local answers are never stamped earlier. */
  knownAt: number;
  resetAt: number[];
  lastFlushAt: number;
  flushing: Promise<void> | undefined;
}

interface Entry {
  readonly key: string;
  /** The rule ids the local state was built for; another set of rules starts it over. */
  signature: string;
  /** Whether the rules can be leased (no sliding window), worked out once per set of rules. */
  leasable: boolean;
  rules: readonly ResolvedRule[];
  /** Local clock, last decision. */
  lastSeen: number;
  denial: Denial | undefined;
  lease: Lease | undefined;
  fetching: Promise<LimitResult> | undefined;
  counts: Counts | undefined;
}

/** Timers exist in every runtime the tier targets, but the package compiles without DOM or Node typings. */
const timers = globalThis as unknown as {
  setInterval?: (callback: () => void, ms: number) => unknown;
  clearInterval?: (handle: unknown) => void;
};

/** lru-cache's get and peek default their options to a new `{}` per call; one shared object instead (lru-cache only writes `status` on it, with diagnostics on). */
const GET_OPTIONS = {};
const PEEK_OPTIONS = {};

const SWEEP_EVERY = 64;
const SWEEP_BATCH = 8;
/** How far apart the instances of a fleet come back from one outage, at most: see `recovering`. */
const RECOVERY_SPREAD_MS = 1000;
/** How long a cost that can never fit is refused locally (it can only start fitting if the rules change). */
const NEVER_DENIAL_MS = 1000;

/**
 * A Store in front of a shared store that answers from process memory where its strategy allows. See the
 * package README for the strategies, their bounds and how they were measured.
 * @example
 * const store = tieredStore({ remote: redisStore(redis), instances: 4, strategy: 'lease' });
 * const limiter = createLimiter({ store, rules: fixedWindow({ limit: 1000, window: '1s' }) });
 */
export function tieredStore(options: TieredStoreOptions): TieredStore {
  return new TieredStore(options);
}

export class TieredStore implements Store {
  readonly capabilities: StoreCapabilities;
  readonly strategy: TierStrategy;
  private readonly options: ResolvedOptions;
  private readonly remote: Store;
  private readonly policy: FailurePolicy;
  /** What this instance limits on while the remote store is down. */
  private readonly share: LocalShare;
  private readonly entries: LRUCache<string, Entry>;
  private readonly counters: TierStats = {
    decisions: 0,
    local: 0,
    denyCacheHits: 0,
    remoteCalls: 0,
    degraded: 0,
    leasedUnits: 0,
    returnedUnits: 0,
    lapsedUnits: 0,
    droppedUnits: 0,
    flushedUnits: 0,
    overAdmittedUnits: 0,
  };
  /** Remote clock minus local clock, from the last remote answer (0 for a client-clock remote store). */
  private offset = 0;
  /** Tier clock: the first and the latest connection error of the remote store's current outage; undefined while it answers. */
  private failingSince: number | undefined;
  private lastErrorAt = Number.NEGATIVE_INFINITY;
  /** Tier clock: the last outage that ended: its first connection error, and the answer that ended it. */
  private lastOutage: { since: number; until: number } | undefined;
  private calls = 0;
  private timer: unknown;
  private timerTried = false;
  private closed = false;
  private readonly pending = new Set<Promise<unknown>>();
  private readonly signatures = new WeakMap<readonly ResolvedRule[], string>();
  private lastRules: readonly ResolvedRule[] | undefined;
  private lastSignature = '';
  private readonly callRemote = (request: LimitRequest): LimitResult | Promise<LimitResult> => {
    this.counters.remoteCalls++;
    return this.remote.limit(request);
  };

  constructor(options: TieredStoreOptions) {
    this.options = resolveOptions(options);
    this.remote = this.options.remote;
    this.strategy = this.options.strategy;
    const operations = this.remote.capabilities.operations.filter(
      (op): op is StoreOperation => op === 'limit' || op === 'reset' || op === 'take' || op === 'reserve' || (op === 'lease' && typeof this.remote.lease === 'function'),
    );
    this.capabilities = { synchronous: false, clock: 'client', operations, memoryFirst: true };
    this.share = new LocalShare(this.options.instances, this.options.maxKeys);
    this.policy = createFailurePolicy({
      timeout: this.options.timeout,
      circuitBreaker: this.options.circuitBreaker,
      // No fallback store in the policy: the tier answers a failure on its share itself, for the caller's
      // request (a failed batch take must cost the share one unit, not the batch).
      onStoreError: 'allow',
      clock: this.options.clock,
      caller: 'tieredStore',
    });
    this.entries = new LRUCache<string, Entry>({ max: this.options.maxKeys, dispose: (entry, _key, reason) => this.evicted(entry, reason) });
  }

  /** A copy of the counters. */
  stats(): TierStats {
    return { ...this.counters };
  }

  limit(request: LimitRequest): LimitResult | Promise<LimitResult> {
    this.counters.decisions++;
    if (this.closed) return this.decideRemotely(request, undefined);
    this.housekeeping();
    if (this.lastOutage !== undefined && this.recovering(request)) return this.shared(request, RECOVERING);
    const entry = this.entryFor(request);
    const { mode } = request;
    if (mode === 'consume' || mode === 'peek') {
      const replay = this.denied(entry, request);
      if (replay !== undefined) return replay;
    }
    if (mode !== 'consume') {
      // A refund (or a take, or a booking) changes the shared state; a refusal remembered from before may no longer hold.
      if (mode !== 'peek') entry.denial = undefined;
      return this.decideRemotely(request, entry);
    }
    if (this.strategy === 'lease' && entry.leasable) return this.leased(entry, request);
    if (this.strategy === 'async') return this.counted(entry, request);
    return this.decideRemotely(request, entry);
  }

  /**
   * Concurrency leases go straight to the remote store: a count of requests in flight across the fleet has no
   * local shortcut (the concurrency limiter's own failure policy answers a failure).
   */
  lease(request: LeaseRequest): LeaseResult | Promise<LeaseResult> {
    const remote = this.remote.lease;
    if (typeof remote !== 'function') throw new SluiceError('UNSUPPORTED_OPERATION', 'tieredStore: the remote store does not run leases');
    this.counters.remoteCalls++;
    return remote.call(this.remote, request);
  }

  reset(key: string, ruleIds: readonly string[]): void | Promise<void> {
    // Local state goes without being returned or flushed: the remote state it belongs to is being forgotten too.
    const entry = this.entries.peek(key, PEEK_OPTIONS);
    if (entry !== undefined) {
      entry.lease = undefined;
      entry.counts = undefined;
      entry.denial = undefined;
      this.entries.delete(key);
    }
    return this.remote.reset(key, ruleIds);
  }

  /**
   * Gives back every unspent leased unit it safely can and counts every local admission remotely, then stops the
   * timer. The remote store stays open (it is the caller's). Calls after close go straight to the remote store.
   */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    if (this.timer !== undefined) timers.clearInterval?.(this.timer);
    const work: Array<Promise<unknown>> = [];
    for (const entry of this.entries.values()) work.push(this.release(entry) ?? Promise.resolve(), this.flushAll(entry));
    work.push(...this.pending);
    await Promise.allSettled(work);
    this.entries.clear();
  }

  /** Gives back every lease and flushes every count now, as close() does, but keeps the tier open (before a deploy, in tests). */
  async sync(): Promise<void> {
    const work: Array<Promise<unknown>> = [];
    const now = this.options.clock();
    for (const entry of this.entries.rvalues()) {
      const tidied = entry === undefined ? undefined : this.tidy(entry, now, true);
      if (tidied !== undefined) work.push(tidied);
    }
    await Promise.allSettled(work);
  }

  // ---------------------------------------------------------------------------------------------------------------
  // Remote decisions and the deny cache

  /** One remote call under the failure policy; on a failure, the local share answers (marked with the error). */
  private decideRemotely(request: LimitRequest, entry: Entry | undefined): LimitResult | Promise<LimitResult> {
    const answer = this.policy.run(request, this.callRemote);
    if (isPromiseLike(answer)) return answer.then((a) => this.settled(request, entry, a));
    return this.settled(request, entry, answer);
  }

  private settled(request: LimitRequest, entry: Entry | undefined, answer: LimitResult | Failover): LimitResult {
    if (answer instanceof Failover) return this.onShare(request, answer.error);
    this.observe(request, answer);
    // An answer that comes back while the share finishes a window is not used: the shared store counted it, but
    // the share decides (so a burst of calls in flight when the store returned cannot add to the shares' admissions).
    if (this.lastOutage !== undefined && request.mode === 'consume' && this.recovering(request)) return this.shared(request, RECOVERING);
    if (entry !== undefined && (request.mode === 'consume' || request.mode === 'peek')) {
      // Anything this instance consumed moves the retry time of a refusal it remembers: forgotten.
      if (request.mode === 'consume' && request.cost > 0 && answer.outcomes.every((o) => o.allowed)) entry.denial = undefined;
      else this.remember(entry, request.cost, answer);
    }
    if (entry?.counts !== undefined && request.mode === 'consume') {
      entry.counts.known = answer.outcomes.map((o) => o.remaining);
      entry.counts.knownAt = answer.now;
      entry.counts.resetAt = answer.outcomes.map((o) => o.resetAt);
    }
    return answer;
  }

  /**
   * The caller's request decided on this instance's share of the limit (limit ÷ instances), marked with why the
   * remote store did not answer, where that cannot take the fleet over the limit; otherwise a degraded refusal.
   * The share answers in a fixed window only when every instance is on its share there too: the outage began before
   * the window did (in the window an outage begins, the remote store may already have admitted the whole limit),
   * and the remote store refused a connection since the window began (an instance whose breaker is merely open may
   * be the only one not to have recovered). A timeout is no outage: the store may be slow only for this instance,
   * and the call may still run there.
   */
  private onShare(request: LimitRequest, error: SluiceError): LimitResult {
    const now = this.options.clock();
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

  private shared(request: LimitRequest, error: SluiceError): LimitResult {
    this.counters.degraded++;
    return { ...this.share.limit(request), error };
  }

  /**
   * After an outage that began before the fixed window it ended in, that window is finished on the share, and so
   * is the window that holds the next RECOVERY_SPREAD_MS: the other instances spent it on their shares too (the
   * remote store, perhaps restarted empty, never counted those admissions), and they come back one by one, each
   * when its client reconnects and its breaker's cooldown ends.
   */
  private recovering(request: LimitRequest): boolean {
    const { since, until } = this.lastOutage!;
    const now = this.options.clock();
    let fixed = false;
    for (const rule of request.rules) {
      if (rule.algorithm !== 'fixed-window') continue;
      fixed = true;
      const windowMs = (rule.params as { windowMs: number }).windowMs;
      if (since < windowStart(rule, until) && now < windowStart(rule, until + RECOVERY_SPREAD_MS) + windowMs) return true;
    }
    if (fixed && now - until > 2 * RECOVERY_SPREAD_MS + 86_400_000) this.lastOutage = undefined;
    return false;
  }

  /**
   * When the share may not answer these rules (see onShare), the end of the window (tier clock) that forbids it;
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

  /** The remote clock's lead over the local one (a store-clock remote answers in its own time); an answer ends an outage. */
  private observe(request: LimitRequest, result: LimitResult): void {
    this.offset = this.remote.capabilities.clock === 'store' ? result.now - request.now : 0;
    if (this.failingSince !== undefined) {
      this.lastOutage = { since: this.failingSince, until: this.options.clock() };
      this.failingSince = undefined;
    }
  }

  /** Remembers a refusal until the time the remote store said the same cost could pass. */
  private remember(entry: Entry, cost: number, result: LimitResult): void {
    let until = Number.NEGATIVE_INFINITY;
    for (const o of result.outcomes) {
      if (o.allowed) continue;
      const retry = o.retryAt === NEVER ? result.now + NEVER_DENIAL_MS : o.retryAt;
      if (retry > until) until = retry;
    }
    if (until <= result.now) return;
    const outcomes = result.outcomes.map(withoutModeFields);
    entry.denial = { cost, mixed: outcomes.some((o) => o.allowed), at: result.now, until, outcomes };
  }

  /** A remembered refusal that covers this request, replayed as the remote store gave it. */
  private denied(entry: Entry, request: LimitRequest): LimitResult | undefined {
    const denial = entry.denial;
    if (denial === undefined) return undefined;
    const now = request.now + this.offset;
    if (now >= denial.until || now < denial.at) {
      entry.denial = undefined;
      return undefined;
    }
    // Only the same cost: a larger one can have a later retryAt, or never fit at all (cost_exceeds_limit).
    if (request.cost !== denial.cost) return undefined;
    this.counters.local++;
    this.counters.denyCacheHits++;
    // A rule that had room in a compound refusal says "now" for its retry time, as a fresh answer would.
    return { now, outcomes: denial.mixed ? denial.outcomes.map((o) => (o.allowed ? { ...o, retryAt: now } : o)) : denial.outcomes };
  }

  // ---------------------------------------------------------------------------------------------------------------
  // Leased batches

  private leased(entry: Entry, request: LimitRequest): LimitResult | Promise<LimitResult> {
    let lease = entry.lease;
    if (lease !== undefined && this.options.clock() >= lease.spendBefore) {
      this.background(this.release(entry));
      lease = undefined;
    }
    if (lease !== undefined && lease.balance >= request.cost) {
      lease.balance -= request.cost;
      this.counters.local++;
      // Never stamped before the take that counted the unit (the offset is shared by every identity and moves).
      return this.leaseAnswer(request, lease, Math.max(request.now + this.offset, lease.takenAt));
    }
    // Another call is fetching a batch for this identity: wait for it rather than fetch a second one.
    // If that fetch failed, the remote store is down: the share answers at once rather than a second remote call
    // (two calls in a row could outlast the limiter's own deadline).
    if (entry.fetching !== undefined) {
      return entry.fetching.then((result) => (result.error !== undefined ? this.onShare(request, result.error) : this.again(entry, request)));
    }
    // A cost above one is decided remotely, exactly; batches serve the usual cost of 1.
    if (request.cost !== 1) return this.decideRemotely(request, entry);
    const fetch = this.fetch(entry, request);
    entry.fetching = fetch;
    return fetch.finally(() => {
      if (entry.fetching === fetch) entry.fetching = undefined;
    });
  }

  /** After waiting for another call's batch: the deny cache first (the batch may have come back empty), then the lease. */
  private again(entry: Entry, request: LimitRequest): LimitResult | Promise<LimitResult> {
    return this.denied(entry, request) ?? this.leased(entry, request);
  }

  /**
   * Takes a batch (a sixteenth of the smallest limit, at most maxBatch; fewer if less is left), spends one unit of
   * it on this request and keeps the rest until its window ends or its ttl passes.
   */
  private async fetch(entry: Entry, request: LimitRequest): Promise<LimitResult> {
    const sentAt = this.options.clock();
    const take: LimitRequest = { key: request.key, rules: request.rules, cost: this.batchSize(request.rules), mode: 'take', now: request.now };
    const answer = await this.policy.run(take, this.callRemote);
    if (answer instanceof Failover) return this.onShare(request, answer.error);
    this.observe(request, answer);
    // A batch taken while the share finishes a window lapses unspent (see settled()).
    if (this.lastOutage !== undefined && this.recovering(request)) return this.shared(request, RECOVERING);
    const granted = answer.outcomes[0]?.granted ?? 0;
    const outcomes = answer.outcomes.map(withoutModeFields);
    if (granted === 0) {
      // Nothing fits: the take's outcomes are those of a one-unit peek, a refusal to remember (the window is spent).
      const refusal = { now: answer.now, outcomes };
      this.remember(entry, 1, refusal);
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
  private release(entry: Entry): Promise<void> | undefined {
    const lease = entry.lease;
    entry.lease = undefined;
    if (lease === undefined || lease.balance === 0) return undefined;
    const units = lease.balance;
    if (!lease.returnable) {
      this.counters.lapsedUnits += units;
      return undefined;
    }
    const refund: LimitRequest = { key: entry.key, rules: entry.rules, cost: units, mode: 'refund', now: this.options.clock() };
    return Promise.resolve(this.policy.run(refund, this.callRemote)).then((answer) => {
      if (answer instanceof Failover) this.counters.droppedUnits += units;
      else this.counters.returnedUnits += units;
    });
  }

  // ---------------------------------------------------------------------------------------------------------------
  // Asynchronous counting

  private counted(entry: Entry, request: LimitRequest): LimitResult | Promise<LimitResult> {
    const counts = (entry.counts ??= { unflushed: 0, inflight: 0, deciding: 0, known: undefined, knownAt: 0, resetAt: [], lastFlushAt: request.now, flushing: undefined });
    const cost = request.cost;
    const known = counts.known;
    const unsynced = counts.unflushed + counts.inflight + counts.deciding;
    if (known !== undefined && unsynced + cost <= this.options.maxUnsynced && least(known) - unsynced - cost >= this.options.threshold) {
      counts.unflushed += cost;
      this.counters.local++;
      const now = Math.max(request.now + this.offset, counts.knownAt);
      if (counts.flushing === undefined && (counts.unflushed >= this.options.flushEvery || request.now - counts.lastFlushAt >= this.options.syncIntervalMs)) {
        this.background(this.flush(entry));
      }
      const left = unsynced + cost;
      const outcomes = request.rules.map((rule, i) => ({
        id: rule.id,
        allowed: true,
        limit: rule.limit,
        remaining: Math.max(0, (known[i] ?? 0) - left),
        resetAt: Math.max(now, counts.resetAt[i] ?? now),
        retryAt: now,
      }));
      return { now, outcomes };
    }
    // Near the limit, or nothing known yet, or too much uncounted: decide remotely.
    counts.deciding += cost;
    const done = (result: LimitResult): LimitResult => {
      counts.deciding -= cost;
      return result;
    };
    const failed = (error: unknown): never => {
      counts.deciding -= cost;
      throw error;
    };
    // What is admitted locally is sent first, not waited for: on one connection the remote store counts it before
    // this decision, and a decision never waits for more than its own round trip.
    if (counts.unflushed > 0 && counts.flushing === undefined) this.background(this.flush(entry));
    const answer = this.decideRemotely(request, entry);
    return isPromiseLike(answer) ? answer.then(done, failed) : done(answer);
  }

  /** Counts the units admitted locally so far with one `take`; what the remote store had no room for is over-admission. */
  private flush(entry: Entry): Promise<void> {
    const counts = entry.counts;
    if (counts === undefined || counts.unflushed === 0 || counts.flushing !== undefined) return counts?.flushing ?? Promise.resolve();
    const units = counts.unflushed;
    counts.unflushed = 0;
    counts.inflight += units;
    const local = this.options.clock();
    counts.lastFlushAt = local;
    const take: LimitRequest = { key: entry.key, rules: entry.rules, cost: units, mode: 'take', now: local };
    const flushing = Promise.resolve(this.policy.run(take, this.callRemote))
      .then((answer) => {
        if (answer instanceof Failover) {
          // Not counted (or not known to be): kept, and sent again with the next flush.
          counts.unflushed += units;
          return;
        }
        this.observe(take, answer);
        const granted = answer.outcomes[0]?.granted ?? 0;
        this.counters.flushedUnits += units;
        this.counters.overAdmittedUnits += units - granted;
        counts.known = answer.outcomes.map((o) => o.remaining);
        counts.knownAt = answer.now;
        counts.resetAt = answer.outcomes.map((o) => o.resetAt);
      })
      .finally(() => {
        counts.inflight -= units;
        counts.flushing = undefined;
      });
    counts.flushing = flushing;
    return flushing;
  }

  /** Flushes until nothing admitted locally is uncounted (or a flush fails: then the units wait for the next one). */
  private async flushAll(entry: Entry): Promise<void> {
    for (let round = 0; round < 3; round++) {
      const counts = entry.counts;
      if (counts === undefined) return;
      if (counts.flushing !== undefined) await counts.flushing.catch(() => undefined);
      if (counts.unflushed === 0) return;
      await this.flush(entry).catch(() => undefined);
    }
  }

  // ---------------------------------------------------------------------------------------------------------------
  // Entries and housekeeping

  private entryFor(request: LimitRequest): Entry {
    const signature = this.signatureOf(request.rules);
    let entry = this.entries.get(request.key, GET_OPTIONS);
    if (entry === undefined) {
      entry = this.newEntry(request, signature);
      this.entries.set(request.key, entry);
    } else if (entry.signature !== signature) {
      // The rules changed (configure, a quota): local state was built for others. Leases go back, counts are sent.
      this.background(this.release(entry));
      this.background(this.flushAll(entry));
      entry = this.newEntry(request, signature);
      this.entries.set(request.key, entry);
    }
    entry.rules = request.rules;
    entry.lastSeen = request.now;
    return entry;
  }

  private newEntry(request: LimitRequest, signature: string): Entry {
    const fresh: Entry = {
      key: request.key,
      signature,
      leasable: leasable(request.rules),
      rules: request.rules,
      lastSeen: 0,
      denial: undefined,
      lease: undefined,
      fetching: undefined,
      counts: undefined,
    };
    return fresh;
  }

  private signatureOf(rules: readonly ResolvedRule[]): string {
    if (rules === this.lastRules) return this.lastSignature;
    let signature = this.signatures.get(rules);
    if (signature === undefined) {
      signature = rules.map((r) => `${r.id}:${r.algorithm}:${r.limit}:${JSON.stringify(r.params)}`).join('|');
      this.signatures.set(rules, signature);
    }
    this.lastRules = rules;
    this.lastSignature = signature;
    return signature;
  }

  /** Every 64 calls, the least recently used entries get their housekeeping; a timer does it too where one can be unref'd. */
  private housekeeping(): void {
    if (!this.timerTried) this.startTimer();
    if (++this.calls % SWEEP_EVERY !== 0) return;
    const now = this.options.clock();
    let seen = 0;
    for (const entry of this.entries.rvalues()) {
      if (++seen > SWEEP_BATCH) break;
      if (entry !== undefined) this.background(this.tidy(entry, now, false));
    }
  }

  /**
   * A quiet identity's lease goes back; counts waiting longer than syncInterval are flushed. Undefined when there
   * is nothing to send: the timer visits every entry, and most have nothing to do (no promise made for them).
   */
  private tidy(entry: Entry, now: number, force: boolean): Promise<unknown> | undefined {
    let returned: Promise<void> | undefined;
    const lease = entry.lease;
    if (lease !== undefined && entry.fetching === undefined) {
      // A quiet identity's returnable units go back early; a fixed window's stay spendable until the window ends.
      const quiet = lease.returnable && now - entry.lastSeen >= this.options.leaseTtlMs / 4;
      if (force || quiet || now >= lease.spendBefore) returned = this.release(entry);
    }
    const counts = entry.counts;
    if (counts === undefined || counts.unflushed === 0 || (!force && now - counts.lastFlushAt < this.options.syncIntervalMs)) return returned;
    const flushed = this.flush(entry);
    return returned === undefined ? flushed : Promise.allSettled([returned, flushed]);
  }

  private startTimer(): void {
    this.timerTried = true;
    const { setInterval, clearInterval } = timers;
    // The deny cache has no background work; the timer visits every entry, so it runs no more often than needed.
    if (this.strategy === 'deny-cache') return;
    if (!this.options.timers || typeof setInterval !== 'function' || typeof clearInterval !== 'function') return;
    const period = Math.max(10, this.strategy === 'lease' ? this.options.leaseTtlMs / 4 : this.options.syncIntervalMs);
    const timer = setInterval(() => {
      const now = this.options.clock();
      for (const entry of this.entries.rvalues()) if (entry !== undefined) this.background(this.tidy(entry, now, false));
    }, period);
    const unref = (timer as { unref?: () => void }).unref;
    if (typeof unref === 'function') {
      unref.call(timer);
      this.timer = timer;
    } else {
      // A timer that would keep the runtime alive (or run outside any request on an edge platform): none.
      clearInterval(timer);
    }
  }

  /** An entry the LRU let go (full, or deleted): its lease goes back and its counts are sent, in the background. */
  private evicted(entry: Entry, reason: string): void {
    if (reason === 'set' || this.closed) return; // replaced by entryFor, which already released it; or close() does it
    if (entry.lease !== undefined) this.background(this.release(entry));
    if (entry.counts !== undefined && entry.counts.unflushed > 0) this.background(this.flushAll(entry));
  }

  /** Background work never rejects unhandled; with waitUntil the platform keeps it alive, otherwise close() waits for it. */
  private background(work: Promise<unknown> | undefined): void {
    if (work === undefined) return;
    const settled = work.then(
      () => undefined,
      () => undefined,
    );
    if (this.options.waitUntil !== undefined) {
      this.options.waitUntil(settled);
      return;
    }
    this.pending.add(settled);
    void settled.then(() => this.pending.delete(settled));
  }
}

/** Where a fixed window that holds `now` began (the rule's own clock). */
function windowStart(rule: ResolvedRule, now: number): number {
  const { windowMs, offsetMs } = rule.params as { windowMs: number; offsetMs: number };
  return Math.floor((now - offsetMs) / windowMs) * windowMs + offsetMs;
}

/** A degraded answer's reason while the share finishes the window an outage ended in. */
const RECOVERING = new SluiceError('STORE_ERROR', 'tieredStore: the remote store answers again; this fixed window, begun during the outage, is finished on the local share');

/** A refusal of one rule until `until` (the request's clock): the window an outage began in. */
function refusedUntil(rule: ResolvedRule, until: number): RuleOutcome {
  return { id: rule.id, allowed: false, limit: rule.limit, remaining: 0, resetAt: until, retryAt: until };
}

function least(values: readonly number[]): number {
  let min = Number.POSITIVE_INFINITY;
  for (const v of values) if (v < min) min = v;
  return min;
}

/** A take's outcome as a consume's: `granted` belongs to the take the tier made, not to the caller's request. */
function withoutModeFields(outcome: RuleOutcome): RuleOutcome {
  if (outcome.granted === undefined && outcome.startAt === undefined) return outcome;
  return { id: outcome.id, allowed: outcome.allowed, limit: outcome.limit, remaining: outcome.remaining, resetAt: outcome.resetAt, retryAt: outcome.retryAt };
}
