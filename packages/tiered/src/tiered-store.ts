import { SluiceError } from '@sluice/core';
import {
  FailureAnswer,
  createFailurePolicy,
  type FastRequest,
  type LeaseRequest,
  type LeaseResult,
  type LimitRequest,
  type LimitResult,
  type MemoryAnswer,
  type MemoryFirstStore,
  type MemoryPath,
  type StoreCapabilities,
  type StoreOperation,
} from '@sluice/core/store';
import { isPromiseLike, timers } from '@sluice/core/internal';
import { LocalShare } from './local-share.js';
import { Outage } from './outage.js';
import { resolveOptions, type ResolvedOptions, type TierStrategy, type TieredStoreOptions } from './options.js';
import type { Entry, TierStats } from './entry.js';
import { Entries } from './entries.js';
import { AsyncCounts } from './async-counts.js';
import { denied, deniedInto, remember } from './deny-cache.js';
import { Leases, type TierHost } from './lease.js';
import { Remote } from './remote.js';

export type { TierStats } from './entry.js';

const SWEEP_EVERY = 64;
const SWEEP_BATCH = 8;

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

export class TieredStore implements MemoryFirstStore {
  readonly capabilities: StoreCapabilities;
  readonly strategy: TierStrategy;
  private readonly options: ResolvedOptions;
  private readonly remote: Remote;
  /** The remote store's outages, and the local share that limits while it is down. */
  private readonly outage: Outage;
  private readonly entries: Entries;
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
  private calls = 0;
  private timer: unknown;
  private timerTried = false;
  private closed = false;
  private readonly pending = new Set<Promise<unknown>>();
  private readonly leases: Leases;
  private readonly counts: AsyncCounts;

  constructor(options: TieredStoreOptions) {
    this.options = resolveOptions(options);
    this.strategy = this.options.strategy;
    const remote = this.options.remote;
    const operations = remote.capabilities.operations.filter(
      (op): op is StoreOperation =>
        op === 'limit' || op === 'reset' || op === 'take' || op === 'reserve' || (op === 'lease' && typeof remote.lease === 'function'),
    );
    this.capabilities = { synchronous: false, clock: 'client', operations, memoryFirst: true, answersFailures: true };
    this.outage = new Outage(new LocalShare(this.options.instances, this.options.maxKeys), this.options.clock, this.counters);
    const policy = createFailurePolicy({
      timeout: this.options.timeout,
      circuitBreaker: this.options.circuitBreaker,
      // No fallback store in the policy: the tier answers a failure on its share itself, for the caller's
      // request (a failed batch take must cost the share one unit, not the batch).
      onStoreError: 'allow',
      clock: this.options.clock,
      caller: 'tieredStore',
    });
    this.remote = new Remote(remote, policy, this.outage, this.counters);
    const host: TierHost = {
      decideRemotely: (request, entry) => this.decideRemotely(request, entry),
      background: (work) => this.background(work),
    };
    this.leases = new Leases(this.remote, this.outage, this.options, this.counters, host);
    this.counts = new AsyncCounts(this.remote, this.options, this.counters, host);
    this.entries = new Entries(
      this.options.maxKeys,
      (entry, reason) => this.evicted(entry, reason),
      (entry) => {
        // The rules changed (configure, a quota): local state was built for others. Leases go back, counts are sent.
        this.background(this.leases.release(entry));
        this.background(this.counts.flushAll(entry));
      },
    );
  }

  /** A copy of the counters. */
  stats(): TierStats {
    return { ...this.counters };
  }

  limit(request: LimitRequest): LimitResult | Promise<LimitResult> {
    this.counters.decisions++;
    if (this.closed) return this.decideRemotely(request, undefined);
    this.housekeeping();
    if (this.outage.recovering(request)) return this.outage.finishing(request);
    return this.decide(this.entries.find(request), request);
  }

  /** Core's memory-path seam (see MemoryFirstStore): one limiter's single-rule step operations, found by identity. */
  bindMemoryPath(keyPrefix: string): MemoryPath {
    const index = this.entries.index(keyPrefix);
    const verbatimLength = keyPrefix.length + 1;
    return { limitOne: (request, out) => this.limitIndexed(index, verbatimLength, request, out) };
  }

  /**
   * `limit(request)` found through the identity index; a refusal the deny cache replays and a unit spent from a lease
   * are written into `out` (undefined returned), every other answer comes from `decide` as `limit` gives it. What
   * goes on to the remote store or the local share is a plain request: core's has its key as a getter on its
   * prototype, which a store that copies a request with a spread would lose (the local share does).
   */
  private limitIndexed(index: Map<string, Entry>, verbatimLength: number, request: FastRequest, out: MemoryAnswer) {
    this.counters.decisions++;
    if (this.closed) return this.decideRemotely(plain(request), undefined);
    this.housekeeping();
    if (this.outage.recovering(request)) return this.outage.finishing(plain(request));
    const entry = this.entries.findIndexed(index, verbatimLength, request);
    if (request.operation !== 'refund') {
      if (entry.denial !== undefined && deniedInto(entry, request, this.remote.offset, this.counters, out)) return undefined;
      if (request.operation === 'consume' && this.strategy === 'lease' && entry.leasable && this.leases.leasedInto(entry, request, out))
        return undefined;
    }
    return this.decide(entry, plain(request));
  }

  /** The strategy's decision for an entry found: the deny cache, then a lease, async counts or the remote store. */
  private decide(entry: Entry, request: LimitRequest): LimitResult | Promise<LimitResult> {
    const { operation } = request;
    if (operation === 'consume' || operation === 'peek') {
      const replay = denied(entry, request, this.remote.offset, this.counters);
      if (replay !== undefined) return replay;
    }
    if (operation !== 'consume') {
      // A refund (or a take, or a booking) changes the shared state; a refusal remembered from before may no longer hold.
      if (operation !== 'peek') entry.denial = undefined;
      return this.decideRemotely(request, entry);
    }
    if (this.strategy === 'lease' && entry.leasable) return this.leases.leased(entry, request);
    if (this.strategy === 'async') return this.counts.decide(entry, request);
    return this.decideRemotely(request, entry);
  }

  /**
   * Concurrency leases go straight to the remote store: a count of requests in flight across the fleet has no
   * local shortcut (the concurrency limiter's own failure policy answers a failure).
   */
  lease(request: LeaseRequest): LeaseResult | Promise<LeaseResult> {
    const store = this.remote.store;
    const remote = store.lease;
    if (typeof remote !== 'function') throw new SluiceError('UNSUPPORTED_OPERATION', 'tieredStore: the remote store does not run leases');
    this.counters.remoteCalls++;
    return remote.call(store, request);
  }

  reset(key: string, ruleIds: readonly string[]): void | Promise<void> {
    // Local state goes without being returned or flushed: the remote state it belongs to is being forgotten too.
    const entry = this.entries.peek(key);
    if (entry !== undefined) {
      entry.lease = undefined;
      entry.counts = undefined;
      entry.denial = undefined;
      this.entries.delete(key);
    }
    return this.remote.store.reset(key, ruleIds);
  }

  /**
   * Gives back every unspent leased unit it safely can and counts every local admission remotely, then stops the
   * timer. The remote store stays open (it is the caller's). Calls after close go straight to the remote store.
   */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    if (this.timer !== undefined) timers.clearInterval(this.timer);
    const work: Array<Promise<unknown>> = [];
    for (const entry of this.entries.values()) work.push(this.leases.release(entry) ?? Promise.resolve(), this.counts.flushAll(entry));
    work.push(...this.pending);
    await Promise.allSettled(work);
    this.entries.clear();
  }

  /** Gives back every lease and flushes every count now, as close() does, but keeps the tier open (before a deploy, in tests). */
  async sync(): Promise<void> {
    const work: Array<Promise<unknown>> = [];
    const now = this.options.clock();
    for (const entry of this.entries.rvalues()) {
      const sending = entry === undefined ? undefined : this.returnLeaseOrFlush(entry, now, true);
      if (sending !== undefined) work.push(sending);
    }
    await Promise.allSettled(work);
  }

  // ---------------------------------------------------------------------------------------------------------------
  // Remote decisions and the deny cache

  /** One remote call under the failure policy; on a failure, the local share answers (marked with the error). */
  private decideRemotely(request: LimitRequest, entry: Entry | undefined): LimitResult | Promise<LimitResult> {
    const answer = this.remote.run(request);
    if (isPromiseLike(answer)) return answer.then((a) => this.settled(request, entry, a));
    return this.settled(request, entry, answer);
  }

  private settled(request: LimitRequest, entry: Entry | undefined, answer: LimitResult | FailureAnswer): LimitResult {
    if (answer instanceof FailureAnswer) return this.outage.answer(request, answer.error);
    this.remote.observe(request, answer);
    // An answer that comes back while the share finishes a window is not used: the shared store counted it, but
    // the share decides (so a burst of calls in flight when the store returned cannot add to the shares' admissions).
    if (request.operation === 'consume' && this.outage.recovering(request)) return this.outage.finishing(request);
    if (entry !== undefined && (request.operation === 'consume' || request.operation === 'peek')) {
      // Anything this instance consumed moves the retry time of a refusal it remembers: forgotten.
      if (request.operation === 'consume' && request.cost > 0 && answer.outcomes.every((o) => o.allowed)) entry.denial = undefined;
      else remember(entry, request.cost, answer);
    }
    if (entry?.counts !== undefined && request.operation === 'consume') {
      entry.counts.known = answer.outcomes.map((o) => o.remaining);
      entry.counts.knownAt = answer.now;
      entry.counts.resetAt = answer.outcomes.map((o) => o.resetAt);
    }
    return answer;
  }

  // ---------------------------------------------------------------------------------------------------------------
  // Housekeeping

  /** Every 64 calls, the least recently used entries get their housekeeping; a timer does it too where one can be unref'd. */
  private housekeeping(): void {
    if (!this.timerTried) this.startTimer();
    if (++this.calls % SWEEP_EVERY !== 0) return;
    const now = this.options.clock();
    let seen = 0;
    for (const entry of this.entries.rvalues()) {
      if (++seen > SWEEP_BATCH) break;
      if (entry !== undefined) this.background(this.returnLeaseOrFlush(entry, now, false));
    }
  }

  /**
   * A quiet identity's lease goes back; counts waiting longer than syncInterval are flushed. Undefined when there
   * is nothing to send: the timer visits every entry, and most have nothing to do (no promise made for them).
   */
  private returnLeaseOrFlush(entry: Entry, now: number, force: boolean): Promise<unknown> | undefined {
    let returned: Promise<void> | undefined;
    const lease = entry.lease;
    if (lease !== undefined && entry.fetching === undefined) {
      // A quiet identity's returnable units go back early; a fixed window's stay spendable until the window ends.
      const quiet = lease.returnable && now - entry.lastSeen >= this.options.leaseTtlMs / 4;
      if (force || quiet || now >= lease.spendBefore) returned = this.leases.release(entry);
    }
    const counts = entry.counts;
    if (counts === undefined || counts.unflushed === 0 || (!force && now - counts.lastFlushAt < this.options.syncIntervalMs))
      return returned;
    const flushed = this.counts.flush(entry);
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
      for (const entry of this.entries.rvalues()) if (entry !== undefined) this.background(this.returnLeaseOrFlush(entry, now, false));
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
    if (entry.lease !== undefined) this.background(this.leases.release(entry));
    if (entry.counts !== undefined && entry.counts.unflushed > 0) this.background(this.counts.flushAll(entry));
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

/** A request as an object of its own fields (see limitIndexed). */
function plain(request: LimitRequest): LimitRequest {
  return { key: request.key, rules: request.rules, cost: request.cost, operation: request.operation, now: request.now };
}
