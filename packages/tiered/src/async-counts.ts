/**
 * The `async` strategy: admissions counted in process memory against what the remote store last reported, and
 * sent to it in batches (`flushEvery`, `syncInterval`); near the limit, or with too much uncounted, it decides
 * remotely. Bounded over-admission: at most instances × maxUnsynced per window.
 */
import { FailureAnswer, type LimitRequest, type LimitResult } from '@sluice/core/store';
import { isPromiseLike } from '@sluice/core/internal';
import type { Entry, TierStats } from './entry.js';
import type { TierHost } from './lease.js';
import type { ResolvedOptions } from './options.js';
import type { Remote } from './remote.js';

export class AsyncCounts {
  constructor(
    private readonly remote: Remote,
    private readonly options: ResolvedOptions,
    private readonly counters: TierStats,
    private readonly host: TierHost,
  ) {}

  /** Decides a consume: here, against what the remote store last reported, or there, near the limit or with too much uncounted. */
  decide(entry: Entry, request: LimitRequest): LimitResult | Promise<LimitResult> {
    const counts = (entry.counts ??= {
      unflushed: 0,
      inflight: 0,
      deciding: 0,
      known: undefined,
      knownAt: 0,
      resetAt: [],
      lastFlushAt: request.now,
      flushing: undefined,
    });
    const cost = request.cost;
    const known = counts.known;
    const unsynced = counts.unflushed + counts.inflight + counts.deciding;
    if (known !== undefined && unsynced + cost <= this.options.maxUnsynced && least(known) - unsynced - cost >= this.options.threshold) {
      counts.unflushed += cost;
      this.counters.local++;
      const now = Math.max(request.now + this.remote.offset, counts.knownAt);
      if (
        counts.flushing === undefined &&
        (counts.unflushed >= this.options.flushEvery || request.now - counts.lastFlushAt >= this.options.syncIntervalMs)
      ) {
        this.host.background(this.flush(entry));
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
    if (counts.unflushed > 0 && counts.flushing === undefined) this.host.background(this.flush(entry));
    const answer = this.host.decideRemotely(request, entry);
    return isPromiseLike(answer) ? answer.then(done, failed) : done(answer);
  }

  /** Counts the units admitted locally so far with one `take`; what the remote store had no room for is over-admission. */
  flush(entry: Entry): Promise<void> {
    const counts = entry.counts;
    if (counts === undefined || counts.unflushed === 0 || counts.flushing !== undefined) return counts?.flushing ?? Promise.resolve();
    const units = counts.unflushed;
    counts.unflushed = 0;
    counts.inflight += units;
    const local = this.options.clock();
    counts.lastFlushAt = local;
    const take: LimitRequest = { key: entry.key, rules: entry.rules, cost: units, operation: 'take', now: local };
    const flushing = Promise.resolve(this.remote.run(take))
      .then((answer) => {
        if (answer instanceof FailureAnswer) {
          // Not counted (or not known to be): kept, and sent again with the next flush.
          counts.unflushed += units;
          return;
        }
        this.remote.observe(take, answer);
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
  async flushAll(entry: Entry): Promise<void> {
    for (let round = 0; round < 3; round++) {
      const counts = entry.counts;
      if (counts === undefined) return;
      if (counts.flushing !== undefined) await counts.flushing.catch(() => undefined);
      if (counts.unflushed === 0) return;
      await this.flush(entry).catch(() => undefined);
    }
  }
}

function least(values: readonly number[]): number {
  let min = Number.POSITIVE_INFINITY;
  for (const v of values) if (v < min) min = v;
  return min;
}
