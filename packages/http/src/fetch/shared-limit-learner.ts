/**
 * Learning a third party's limit as a fleet. Each process of a fleet learning on its own (learn-limit.ts) sees a
 * bare 429 only now and then and cuts only its own rules, so a fleet of many never converges. Here the learned
 * limit is held in the shared store, as the identity's quota in the limiter's runtime configuration document
 * (`@sluice/core/config`): one cut there slows every worker, and a `watchConfig` on the same document applies it too.
 *
 * What it guarantees, fleet-wide:
 * - one cut per change: a worker cuts only from the limit its refused request was sent under, by a compare and set
 *   on the document (`ConfigSource.replace`), so eight workers refused in the same burst cut once, not eight times;
 *   the others read the new limit and adopt it;
 * - at most one cut per cut interval (the shortest learnable window of the rules): a worker cuts from a limit only
 *   once it has known that limit for a whole interval, so requests refused while the third party's window still
 *   holds the old traffic do not cut again;
 * - a few 429s do not cut: they may be the fleet's own timing at the edge of the limit (late timers bunching calls
 *   on a starved machine), not a lower limit. Refusals are counted fleet-wide in the limiter's own store (a sliding
 *   log per identity and limit, rule id `refusals`: only refusals of requests sent under the limit in force count
 *   against it), and a cut needs a tenth of what the written rule allows in two windows (at least 3) refused within
 *   two windows: a real drop refuses a large share of the traffic;
 * - a bare 429 halves the learnable limits (multiplicative decrease: one cut must bring a fleet from above the new
 *   limit to below it, since every further cut costs an interval of 429s); a stated limit sets them, never above
 *   the written limits;
 * - after `QUIET_WINDOWS_SHARED` windows without a refusal or a change, one worker probes upward by a tenth of the
 *   written limit; a 429 for a request sent under the probe puts the limit back where it was (not halved), and
 *   each worker that sees that doubles its own quiet time before the next probe (up to 2^6 times).
 *
 * Every worker reads the document on a refusal that may cut, and at most every `refresh` while requests flow (no
 * timer of its own, so nothing to stop); a watcher with a push subscription picks a change up at once. Failures of
 * the source are swallowed: the answer is the caller's, and learning waits for the next refusal or refresh.
 */
import { createLimiter, ruleFromSpec, ruleSpec, slidingWindowLog, type Limiter, type Rule } from '@sluice/core';
import { parseLimiterConfig, type ConfigSource, type LimiterConfig } from '@sluice/core/config';
import {
  cutLimits,
  followStated,
  learnableWindow,
  raiseLimits,
  rulesWithLimits,
  shortestWindow,
  statedLimits,
  writtenLimit,
} from './learn-limit.js';
import type { ResponseLike } from './types.js';

/** A bare 429 shared by the fleet halves the learned limits. */
export const SHARED_CUT_FACTOR = 0.5;
/** Windows without a refusal or a change before the fleet probes upward. */
export const QUIET_WINDOWS_SHARED = 30;
/** A failed probe doubles the quiet time of the workers that see it, up to this many doublings. */
const MAX_QUIET_DOUBLINGS = 6;
/** A bare 429 cuts once refusals within two windows, fleet-wide, reach this share of what the written rule allows in two windows. */
export const REFUSAL_SHARE = 0.1;
/** ...and at least this many. */
export const MIN_REFUSALS_TO_CUT = 3;
/** Compare-and-set attempts per update before giving up until the next refusal (other writers in between). */
const MAX_ATTEMPTS = 8;

/** What one process knows of one identity's shared limit. */
interface IdentityLimitState {
  /** The limits in force, by index of the written rules. */
  limits: number[];
  /** Counts adoptions: a request carries the version it was sent under. */
  version: number;
  /** The version of the last adoption that lowered a limit: a slot booked before it was booked too close to the last. */
  loweredAt: number;
  /** When this process adopted `limits` (its clock, epoch ms); -Infinity for the written limits it started with. */
  since: number;
  /** The limits before the last rise, while `limits` came from a rise (a probe): where a failed probe goes back to. */
  beforeRise: number[] | undefined;
  lastRefusal: number;
  /** Doublings of the quiet time, after failed probes this process saw. */
  doublings: number;
  lastRead: number;
  /** The update or read in flight: one at a time per identity in a process. */
  busy: Promise<void> | undefined;
  /** A read is queued behind `busy` (one is enough: it reads whatever is stored by then). */
  readQueued: boolean;
}

export class SharedLimitLearner {
  private readonly written: readonly Rule[];
  private readonly writtenLimits: readonly number[];
  private readonly windowMs: number;
  private readonly known = new Map<string, IdentityLimitState>();
  /** Refusals within two windows, fleet-wide, that make a bare 429 cut. */
  readonly refusalsToCut: number;
  /** Counts refusals fleet-wide, in the limiter's store: denied once refusalsToCut - 1 were counted within two windows. */
  private readonly refusals: Limiter | undefined;

  constructor(
    private readonly limiter: Limiter,
    private readonly source: ConfigSource,
    private readonly refreshMs: number,
    private readonly clock: () => number = Date.now,
  ) {
    this.written = limiter.rules;
    this.writtenLimits = this.written.map(writtenLimit);
    this.windowMs = shortestWindow(this.written);
    const allowed = Math.min(
      ...this.written.map((rule, i) => (learnableWindow(rule) === this.windowMs ? this.writtenLimits[i]! : Infinity)),
    );
    this.refusalsToCut = Number.isFinite(allowed)
      ? Math.max(MIN_REFUSALS_TO_CUT, Math.ceil(REFUSAL_SHARE * 2 * allowed))
      : MIN_REFUSALS_TO_CUT;
    this.refusals = Number.isFinite(this.windowMs)
      ? createLimiter({
          store: limiter.store,
          name: limiter.name,
          rules: slidingWindowLog({ id: 'refusals', limit: this.refusalsToCut - 1, window: 2 * this.windowMs }),
          clock,
        })
      : undefined;
  }

  /** The limits in force for `identity`, by rule index (for tests and logs). */
  limits(identity: string): readonly number[] {
    return this.state(identity).limits;
  }

  /**
   * The version a request about to be sent for `identity` is sent under: pass it back to `observe`. Reads the
   * stored limits in the background when the last read is older than `refresh`.
   */
  ticket(identity: string): number {
    const known = this.state(identity);
    if (this.clock() - known.lastRead >= this.refreshMs) this.read(identity, known);
    return known.version;
  }

  /** Reads the stored limits for `identity` now; resolves when read (never rejects). */
  prime(identity: string): Promise<void> {
    const known = this.state(identity);
    this.read(identity, known);
    return known.busy ?? Promise.resolve();
  }

  /**
   * Whether a limit was lowered in this process since `ticket` was taken: a slot booked under the old limits is
   * closer to the one before it than the new limits allow, and sending every such slot after a cut (the workers'
   * queue holds up to a whole window of them) keeps the third party's window over its new limit for another window.
   */
  loweredSince(identity: string, ticket: number): boolean {
    return this.state(identity).loweredAt > ticket;
  }

  /** Reads one answer to a request sent under `ticket`. Never rejects; resolves once any update it made is done. */
  async observe(identity: string, response: ResponseLike, ticket: number): Promise<void> {
    const known = this.state(identity);
    const now = this.clock();
    // The limits in force now, taken before any await: a read finishing meanwhile may adopt others, and a change
    // must be computed from (and compared against) the limits this answer is about.
    const from = known.limits;
    const refused = response.status === 429 || response.status === 503;
    if (refused) known.lastRefusal = now;
    const stated = statedLimits(response);
    if (stated.length > 0) {
      const target = followStated(this.written, stated, from);
      if (!sameLimits(target, from)) await this.update(identity, (stored) => (sameLimits(stored, target) ? undefined : target));
    } else if (refused && ticket !== known.version) {
      // Sent under limits this process has since left: another worker's cut may be stored already; read it.
      this.read(identity, known);
    } else if (refused) {
      const back = known.beforeRise;
      if (back !== undefined) {
        // A probe refused: back to the limits it rose from, at once (they held for a whole quiet time).
        await this.update(identity, (stored) => (sameLimits(stored, from) ? back : undefined));
      } else if (now - known.since >= this.windowMs && (await this.confirmed(identity, from))) {
        await this.update(identity, (stored) => (sameLimits(stored, from) ? cutLimits(this.written, from, SHARED_CUT_FACTOR) : undefined));
      } else {
        this.read(identity, known);
      }
    } else if (this.mayProbe(known, now)) {
      await this.update(identity, (stored) => (sameLimits(stored, from) ? raiseLimits(this.written, from) : undefined));
    }
  }

  /**
   * Reads the stored limits in the background: now, or once after the read or update in flight (which may have
   * read before another worker's cut landed).
   */
  private read(identity: string, known: IdentityLimitState): void {
    if (known.readQueued) return;
    known.readQueued = true;
    void this.update(
      identity,
      () => undefined,
      () => (known.readQueued = false),
    );
  }

  /**
   * Counts this refusal fleet-wide, against the limits it was sent under (refusals from before a cut say nothing
   * about the limits after it); true when it is at least the refusalsToCut-th within two windows.
   */
  private async confirmed(identity: string, limits: readonly number[]): Promise<boolean> {
    if (this.refusals === undefined) return false;
    try {
      const decision = await this.refusals.limit(`${identity} ${limits.join(',')}`);
      return !decision.allowed && !decision.degraded;
    } catch {
      return false; // the store failed: no evidence, and the answer is still the caller's
    }
  }

  private mayProbe(known: IdentityLimitState, now: number): boolean {
    if (sameLimits(known.limits, this.writtenLimits)) return false;
    const quiet = QUIET_WINDOWS_SHARED * this.windowMs * 2 ** known.doublings;
    return now - known.since >= quiet && now - known.lastRefusal >= quiet;
  }

  private state(identity: string): IdentityLimitState {
    let known = this.known.get(identity);
    if (known === undefined) {
      known = {
        limits: [...this.writtenLimits],
        version: 0,
        loweredAt: 0,
        since: -Infinity,
        beforeRise: undefined,
        lastRefusal: -Infinity,
        doublings: 0,
        lastRead: -Infinity,
        busy: undefined,
        readQueued: false,
      };
      this.known.set(identity, known);
    }
    return known;
  }

  /**
   * Reads the stored limits, adopts them, and writes `next(stored)` over them by compare and set when it gives
   * one (undefined: nothing to write). Runs after the update in flight for the identity; never rejects.
   */
  private update(
    identity: string,
    next: (stored: readonly number[]) => readonly number[] | undefined,
    onStart?: () => void,
  ): Promise<void> {
    const known = this.state(identity);
    const run = (known.busy ?? Promise.resolve())
      .then(() => {
        onStart?.();
        return this.compareAndSet(identity, known, next);
      })
      .catch(() => undefined);
    const tracked = run.finally(() => {
      if (known.busy === tracked) known.busy = undefined;
    });
    known.busy = tracked;
    return tracked;
  }

  private async compareAndSet(
    identity: string,
    known: IdentityLimitState,
    next: (stored: readonly number[]) => readonly number[] | undefined,
  ): Promise<void> {
    for (let attempt = 0; attempt < MAX_ATTEMPTS; attempt++) {
      known.lastRead = this.clock();
      const text = await this.source.read(this.limiter.name);
      const document = text === undefined || text === null ? undefined : parseLimiterConfig(text);
      const stored = this.storedLimits(document, identity);
      this.adopt(identity, known, stored);
      const wanted = next(stored);
      if (wanted === undefined || sameLimits(wanted, stored)) return;
      const written = await this.source.replace!(
        this.limiter.name,
        document?.revision ?? 0,
        JSON.stringify(this.withQuota(document, identity, wanted)),
      );
      if (written) {
        this.adopt(identity, known, wanted);
        return;
      }
    }
  }

  /** The identity's learned limits in a document: its quota's rules matched to the written rules by id. */
  private storedLimits(document: LimiterConfig | undefined, identity: string): number[] {
    const specs = document?.quotas?.[identity];
    if (specs === undefined) return [...this.writtenLimits];
    const byId = new Map(
      specs.map((spec, i) => {
        const rule = ruleFromSpec(spec, `quotas[${JSON.stringify(identity)}][${i}]`);
        return [rule.id, rule] as const;
      }),
    );
    return this.written.map((rule, i) => {
      const learned = byId.get(rule.id);
      return learned === undefined || learned.algorithm !== rule.algorithm
        ? this.writtenLimits[i]!
        : Math.min(this.writtenLimits[i]!, writtenLimit(learned));
    });
  }

  /** The next revision of the document with the identity's quota set to `limits` (removed at the written limits). */
  private withQuota(document: LimiterConfig | undefined, identity: string, limits: readonly number[]): LimiterConfig {
    const quotas: Record<string, unknown> = { ...document?.quotas };
    if (sameLimits(limits, this.writtenLimits)) delete quotas[identity];
    else quotas[identity] = rulesWithLimits(this.written, limits).map(ruleSpec);
    const next: Record<string, unknown> = {
      ...document,
      version: 1,
      revision: (document?.revision ?? 0) + 1,
      updatedAt: this.clock(),
      quotas,
    };
    if (Object.keys(quotas).length === 0) delete next.quotas;
    return parseLimiterConfig(next);
  }

  /** Puts `limits` in force for the identity in this process, when they differ from the ones in force. */
  private adopt(identity: string, known: IdentityLimitState, limits: readonly number[]): void {
    if (sameLimits(limits, known.limits)) return;
    const rose = limits.every((limit, i) => limit >= known.limits[i]!);
    const fellBackFromProbe = known.beforeRise !== undefined && sameLimits(limits, known.beforeRise);
    if (fellBackFromProbe) known.doublings = Math.min(MAX_QUIET_DOUBLINGS, known.doublings + 1);
    const lowered = limits.some((limit, i) => limit < known.limits[i]!);
    known.beforeRise = rose ? known.limits : undefined;
    known.limits = [...limits];
    known.version++;
    if (lowered) known.loweredAt = known.version;
    known.since = this.clock();
    const quotas = new Map(this.limiter.quotas);
    if (sameLimits(limits, this.writtenLimits)) quotas.delete(identity);
    else quotas.set(identity, rulesWithLimits(this.written, limits));
    this.limiter.configure({ quotas });
  }
}

function sameLimits(a: readonly number[], b: readonly number[]): boolean {
  return a.length === b.length && a.every((value, i) => value === b[i]);
}
