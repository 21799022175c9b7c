/**
 * What the tier keeps per identity (an Entry: a remembered refusal, a lease, async counts) and the counters it
 * reports.
 */
import type { LimitResult, ResolvedRule, RuleOutcome } from '@sluice/core/store';

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
export interface Denial {
  cost: number;
  /** Whether a rule had room (a compound refusal): its retry time is rewritten to "now" on every replay. */
  mixed: boolean;
  /** Remote clock: when it was given. A clock that steps back before it asks the shared store again (retry times move with it). */
  at: number;
  until: number;
  outcomes: readonly RuleOutcome[];
}

/** `lease`: units taken from the remote store and not yet spent. */
export interface Lease {
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
export interface Counts {
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

export interface Entry {
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
  /** `lease`: cost-1 requests waiting on `fetching`; the batch taken covers them (see Leases.fetch). */
  waiting: number;
  counts: Counts | undefined;
  /** The tier's move count when the entry was last put at the front of its LRU (recency is kept lazily: Entries.touch). */
  movedAt: number;
  /** The memory path's index that holds this entry (identity to entry, one per limiter key prefix), and its identity there. */
  index: Map<string, Entry> | undefined;
  identity: string;
}
