/**
 * Fleet analytics: an `onDecision` observer that counts each limiter's decisions per second by outcome, with the
 * identities it refused most, and publishes every complete second to an `AnalyticsStore` shared by the fleet, where
 * a dashboard reads the fleet's sums (`sluice dashboard`).
 *
 * What it guarantees:
 * - the decision path does a few comparisons and an increment (one Map update more for a refusal), and no clock
 *   read: a decision is filed under the second of its own time, `decision.now` (the limiter's clock, or the store's
 *   for a store-clock store). Everything else happens once per second per limiter name, off the path. The `now`
 *   option is the timer's clock (which seconds are complete, the retention) and the time of `recordShed`; a decision
 *   filed under a second the timer has already published (a store clock behind this one) goes out at the next tick
 *   and adds to it in the store;
 * - at most one `publish` per limiter name per second from the timer (one store round trip each), and never two
 *   in flight for one name; `flush()` and `stop()` publish when called;
 * - nothing is lost to a failed publish: the seconds are kept and published again at the next tick, until they are
 *   older than `retention`, then dropped and counted (`stats().droppedSeconds`). A publish that failed after the store
 *   applied it (a timeout) is published again: counts are at least once, not exactly once;
 * - nothing reaches the caller: a failing store or a throwing `onError` is reported or swallowed, never thrown and
 *   never an unhandled rejection;
 * - memory is bounded: per name and second, five counters and at most `topK` limited identities. Beyond `topK`
 *   distinct limited identities in a second, the first `topK` are kept and counted exactly, the refusals of the others
 *   are counted in `limited` but in no top entry (`stats().droppedIdentities`): the top list is approximate then.
 *
 * What counts: `limit`, `take` and `reserve` decisions (each is a request asking for room); `peek` and `refund` are
 * not requests and are left out. A decision is `degraded` when the failure policy answered, else `shadowLimited` when
 * shadow mode let a refusal through (reason `shadow`), else `limited` when refused, else `allowed` (a disabled
 * limiter's pass included). Load shedders count `shed` through `onShed` or `recordShed`.
 */
import {
  ANALYTICS_OUTCOMES,
  DEFAULT_ANALYTICS_RETENTION,
  DEFAULT_ANALYTICS_TOP_K,
  type AnalyticsSecond,
  type AnalyticsStore,
  type AnalyticsOutcome,
} from './store.js';
import { describe } from '../shared/describe.js';
import { durationOption, type Duration } from '../shared/duration.js';
import { SluiceError } from '../shared/errors.js';
import type { FleetEvent } from '../shedding/fleet-shedder.js';
import type { DecisionEvent } from '../limiter/types.js';
import { isPromiseLike } from '../shared/promise.js';
import type { ShedEvent } from '../shedding/utilization-shedder.js';
import { timers, unref } from '../shared/timers.js';
import { clockOption, optionalFunction, optionNames, positiveInteger, rejectUnknownOptions, requireObject } from '../shared/validate.js';

export interface FleetAnalyticsOptions {
  /** Where every instance publishes, e.g. `redisAnalyticsStore(redis)`. */
  store: AnalyticsStore;
  /** Limited identities kept per second per limiter name on this instance (the most refused, see the file's notes). @default 20 */
  topK?: number;
  /** Seconds not yet published (the store failing) are kept this long, then dropped and counted. @default '15m' */
  retention?: Duration;
  /**
   * Epoch milliseconds: which seconds are complete, the retention, and the time of `recordShed`. Decisions are filed
   * under their own `decision.now`. Inject the limiter's fake clock in tests. @default Date.now
   */
  now?: () => number;
  /** Called when a publish failed (the seconds are kept and retried). @default console.warn, once per distinct message */
  onError?: (error: unknown) => void;
}

/** What the observer dropped so far: its losses, to alert on. */
export interface FleetAnalyticsStats {
  /** Refusals of identities beyond `topK` in their second: counted in `limited`, in no top entry. */
  readonly droppedIdentities: number;
  /** Seconds never published: the store kept failing for longer than `retention`. */
  readonly droppedSeconds: number;
  /** Seconds waiting to be published, over every name (the current one included). */
  readonly pendingSeconds: number;
}

export interface FleetAnalytics {
  /** Give it to `createLimiter({ onDecision })` (or call it from your own observer). */
  readonly onDecision: (event: DecisionEvent) => void;
  /** Give it to `createUtilizationShedder({ onDecision })` or `createFleetShedder({ onDecision })`: counts each `shed` under the shedder's name. */
  readonly onShed: (event: ShedEvent | FleetEvent) => void;
  /** Counts one request shed under limiter `name` (for a shedder of your own, or to file sheds under a limiter's name). */
  recordShed(name: string): void;
  /**
   * Publishes every complete second now (with `{ all: true }`, the current one too), after the publishes in flight.
   * Settles once done; never rejects (failures go to `onError` and are retried).
   */
  flush(options?: { all?: boolean }): Promise<void>;
  /** Publishes everything, the current second included, and stops the timer; later events are ignored. */
  stop(): Promise<void>;
  stats(): FleetAnalyticsStats;
}

const WHERE = 'createFleetAnalytics';
const KNOWN = optionNames<FleetAnalyticsOptions>({ store: true, topK: true, retention: true, now: true, onError: true });
const RETENTION_RANGE = { min: 1_000, max: 7 * 86_400_000 };
const TICK_MS = 1_000;
/** Indexes into a bucket's counts, in ANALYTICS_OUTCOMES order. */
const ALLOWED = 0;
const LIMITED = 1;
const SHADOW_LIMITED = 2;
const SHED = 3;
const DEGRADED = 4;

/** One limiter name's counts for one second on this instance. */
class Bucket {
  readonly counts = [0, 0, 0, 0, 0];
  /** Limited identity → its refusals, in a box so that a repeat costs one lookup; at most topK entries. */
  readonly top = new Map<string, { count: number }>();
  /** The second's bounds in epoch ms, [startMs, endMs). */
  readonly startMs: number;
  readonly endMs: number;
  constructor(readonly second: number) {
    this.startMs = second * 1000;
    this.endMs = this.startMs + 1000;
  }
}

/** One limiter name: the bucket decisions go to, the seconds waiting, whether a publish is in flight. */
class Series {
  current: Bucket | undefined = undefined;
  /** Second → bucket, the current one included. */
  readonly pending = new Map<number, Bucket>();
  inFlight: Promise<void> | undefined = undefined;
  constructor(readonly name: string) {}
}

/**
 * Makes the observer. Combine it with others with a small function: `onDecision: (e) => { metrics.onDecision(e); analytics.onDecision(e); }`.
 * @example
 * const analytics = createFleetAnalytics({ store: redisAnalyticsStore(redis) });
 * const limiter = createLimiter({ store, rules, name: 'api', onDecision: analytics.onDecision });
 * // on shutdown: await analytics.stop();
 */
export function createFleetAnalytics(options: FleetAnalyticsOptions): FleetAnalytics {
  const raw = requireObject(options, WHERE) as unknown as FleetAnalyticsOptions;
  rejectUnknownOptions(raw, KNOWN, WHERE);
  const store = raw.store as Partial<AnalyticsStore> | undefined;
  if (typeof store !== 'object' || store === null || typeof store.publish !== 'function') {
    throw new SluiceError(
      'INVALID_OPTION',
      `${WHERE}: store must be an analytics store such as redisAnalyticsStore(redis) or memoryAnalyticsStore(), got ${describe(raw.store)}`,
    );
  }
  const topK = positiveInteger(raw.topK ?? DEFAULT_ANALYTICS_TOP_K, `${WHERE}: topK`);
  const retentionMs = durationOption(raw.retention ?? DEFAULT_ANALYTICS_RETENTION, `${WHERE}: retention`, RETENTION_RANGE);
  const now = clockOption(raw.now, `${WHERE}: now`);
  const onError = optionalFunction(raw.onError, `${WHERE}: onError`, '(error) => void') ?? warnOnce();
  return new FleetAnalyticsObserver(store as AnalyticsStore, topK, Math.ceil(retentionMs / 1000), now, onError);
}

class FleetAnalyticsObserver implements FleetAnalytics {
  private readonly series = new Map<string, Series>();
  /** The last name seen and its series: most processes have one limiter, and its name is the same string every time. */
  private lastName: string | undefined = undefined;
  private lastSeries: Series | undefined = undefined;
  private timer: unknown = undefined;
  private stopped = false;
  private droppedIdentities = 0;
  private droppedSeconds = 0;

  readonly onDecision = (event: DecisionEvent): void => {
    const operation = event.operation;
    if (operation === 'peek' || operation === 'refund') return;
    const decision = event.decision;
    const name = event.limiter;
    const series = name === this.lastName ? this.lastSeries! : this.seriesOf(name);
    // The decision's own time: the limiter read its clock already, and a second read would cost as much as the rest.
    // Compared with the current bucket's bounds in ms: no division on the path.
    const now = decision.now;
    let bucket = series.current;
    if (bucket === undefined || !(now >= bucket.startMs && now < bucket.endMs)) {
      bucket = this.newSecond(series, Math.floor(now / 1000));
      if (bucket === undefined) return;
    }
    const counts = bucket.counts;
    if (decision.degraded) counts[DEGRADED]!++;
    else if (decision.allowed) counts[decision.reason === 'shadow' ? SHADOW_LIMITED : ALLOWED]!++;
    else {
      counts[LIMITED]!++;
      this.limited(bucket, event.identity);
    }
  };

  readonly onShed = (event: ShedEvent | FleetEvent): void => {
    if (event.decision.reason === 'shed') this.recordShed(event.limiter);
  };

  constructor(
    private readonly store: AnalyticsStore,
    private readonly topK: number,
    private readonly retentionSeconds: number,
    private readonly now: () => number,
    private readonly onError: (error: unknown) => void,
  ) {}

  recordShed(name: string): void {
    const series = name === this.lastName ? this.lastSeries! : this.seriesOf(name);
    const second = this.currentSecond();
    const current = series.current;
    const bucket = current !== undefined && current.second === second ? current : this.newSecond(series, second);
    if (bucket !== undefined) bucket.counts[SHED]!++;
  }

  async flush(options?: { all?: boolean }): Promise<void> {
    const all = options?.all === true;
    await Promise.all([...this.series.values()].map((series) => series.inFlight));
    const before = all ? Number.POSITIVE_INFINITY : this.currentSecond();
    await Promise.all([...this.series.values()].map((series) => this.publish(series, before)));
  }

  async stop(): Promise<void> {
    this.stopped = true;
    if (this.timer !== undefined) timers.clearInterval(this.timer);
    this.timer = undefined;
    await this.flush({ all: true });
  }

  stats(): FleetAnalyticsStats {
    let pendingSeconds = 0;
    for (const series of this.series.values()) pendingSeconds += series.pending.size;
    return { droppedIdentities: this.droppedIdentities, droppedSeconds: this.droppedSeconds, pendingSeconds };
  }

  private seriesOf(name: string): Series {
    let series = this.series.get(name);
    if (series === undefined) this.series.set(name, (series = new Series(name)));
    this.lastName = name;
    this.lastSeries = series;
    return series;
  }

  /** Once per name and second: the bucket for a second not current, and the timer on the first one. */
  private newSecond(series: Series, second: number): Bucket | undefined {
    if (this.stopped) return undefined;
    if (!Number.isSafeInteger(second) || second < 0) {
      this.report(new SluiceError('INVALID_CLOCK', `${WHERE}: now must return epoch milliseconds, got ${describe(second * 1000)}`));
      return undefined;
    }
    let bucket = series.pending.get(second);
    if (bucket === undefined) series.pending.set(second, (bucket = new Bucket(second)));
    // A clock that stepped back files into an older, still pending second; the current one stays the newest.
    if (series.current === undefined || second > series.current.second) series.current = bucket;
    this.startTimer();
    return bucket;
  }

  private limited(bucket: Bucket, identity: string): void {
    const top = bucket.top;
    const known = top.get(identity);
    if (known !== undefined) known.count++;
    else if (top.size < this.topK) top.set(identity, { count: 1 });
    else this.droppedIdentities++;
  }

  private startTimer(): void {
    if (this.timer !== undefined) return;
    // Started on the first decision, not at creation: an edge runtime may refuse timers at module scope.
    this.timer = unref(timers.setInterval(() => this.tick(), TICK_MS));
  }

  /** The current second, or NaN (reported) when the clock throws: then nothing counts as too old or as current. */
  private currentSecond(): number {
    try {
      return Math.floor(this.now() / 1000);
    } catch (error) {
      this.report(error);
      return Number.NaN;
    }
  }

  private tick(): void {
    const second = this.currentSecond();
    if (Number.isNaN(second)) return;
    for (const series of this.series.values()) {
      if (series.inFlight === undefined) void this.publish(series, second);
    }
  }

  /**
   * Publishes `series`' pending seconds before `before` in one call. The buckets leave `pending` while in flight
   * (decisions for their seconds, after a clock step back, start new ones) and are merged back if the publish fails.
   * Never rejects.
   */
  private publish(series: Series, before: number): Promise<void> {
    if (series.inFlight !== undefined) return series.inFlight;
    const oldest = before === Number.POSITIVE_INFINITY ? this.currentSecond() - this.retentionSeconds : before - this.retentionSeconds;
    const buckets: Bucket[] = [];
    for (const [second, bucket] of series.pending) {
      if (second >= before) continue;
      series.pending.delete(second);
      if (series.current === bucket) series.current = undefined;
      if (second < oldest) this.droppedSeconds++;
      else buckets.push(bucket);
    }
    if (buckets.length === 0) return Promise.resolve();
    buckets.sort((a, b) => a.second - b.second);
    const seconds = buckets.map((bucket) => this.toSecond(bucket));
    const failed = (error: unknown): void => {
      this.restore(series, buckets);
      this.report(error);
    };
    let answer: void | PromiseLike<void>;
    try {
      answer = this.store.publish(series.name, seconds);
    } catch (error) {
      failed(error);
      return Promise.resolve();
    }
    if (!isPromiseLike(answer)) return Promise.resolve();
    const inFlight = Promise.resolve(answer).then(
      () => undefined,
      (error: unknown) => failed(error),
    );
    series.inFlight = inFlight.finally(() => {
      series.inFlight = undefined;
    });
    return series.inFlight;
  }

  /** Puts the buckets of a failed publish back, adding them into any bucket made for the same second since. */
  private restore(series: Series, buckets: readonly Bucket[]): void {
    for (const bucket of buckets) {
      const present = series.pending.get(bucket.second);
      if (present === undefined) {
        series.pending.set(bucket.second, bucket);
        continue;
      }
      for (let i = 0; i < bucket.counts.length; i++) present.counts[i]! += bucket.counts[i]!;
      for (const [identity, { count }] of bucket.top) {
        const known = present.top.get(identity);
        if (known !== undefined) known.count += count;
        else if (present.top.size < this.topK) present.top.set(identity, { count });
        else this.droppedIdentities += count;
      }
    }
  }

  private toSecond(bucket: Bucket): AnalyticsSecond {
    const counts = {} as Record<AnalyticsOutcome, number>;
    for (let i = 0; i < ANALYTICS_OUTCOMES.length; i++) counts[ANALYTICS_OUTCOMES[i]!] = bucket.counts[i]!;
    const topLimited: [string, number][] = [];
    for (const [identity, { count }] of bucket.top) topLimited.push([identity, count]);
    topLimited.sort((a, b) => b[1] - a[1] || (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0));
    return { second: bucket.second, counts, topLimited };
  }

  private report(error: unknown): void {
    try {
      this.onError(error);
    } catch {
      // The handler's own failure is its own: neither the decision path nor the timer sees it.
    }
  }
}

function warnOnce(): (error: unknown) => void {
  const seen = new Set<string>();
  return (error) => {
    const message = error instanceof Error ? error.message : String(error);
    if (seen.has(message) || seen.size >= 100) return;
    seen.add(message);
    timers.console?.warn(`[sluice] createFleetAnalytics: could not publish (kept, retried every second): ${message}`);
  };
}
