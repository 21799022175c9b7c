/**
 * The contract of fleet analytics: what one instance publishes for one limiter and one second, and the store every
 * instance publishes into and a dashboard reads from. A store only adds: each instance publishes its own counts,
 * increments, and `read` returns their sums. Implemented by `memoryAnalyticsStore` (@sluice/memory),
 * `redisAnalyticsStore` (@sluice/redis) and `sqliteAnalyticsStore` (@sluice/sqlite).
 */
import { describe } from '../shared/describe.js';
import { durationOption, type Duration } from '../shared/duration.js';
import { SluiceError } from '../shared/errors.js';
import { clockOption, rejectUnknownOptions } from '../shared/validate.js';

/**
 * What a decision counts as, one of five:
 * - `degraded`: the store failed and the failure policy answered (allowed or not); it wins over the others;
 * - `shadowLimited`: shadow mode let through what enforce mode would have refused;
 * - `limited`: the limiter refused (the cost too large for a rule included);
 * - `shed`: a load shedder refused (see `createFleetAnalytics().onShed` and `recordShed`);
 * - `allowed`: everything else that was let through (a disabled limiter's pass included).
 */
export type AnalyticsOutcome = 'allowed' | 'limited' | 'shadowLimited' | 'shed' | 'degraded';

/** The outcomes in their fixed order (the order of a store's columns and of the observer's counters). */
export const ANALYTICS_OUTCOMES: readonly AnalyticsOutcome[] = Object.freeze(['allowed', 'limited', 'shadowLimited', 'shed', 'degraded']);

/** One limiter's counts for one second: one instance's when published, every instance's sum when read. */
export interface AnalyticsSecond {
  /** Epoch seconds (floor(ms / 1000)) of the decisions. */
  readonly second: number;
  readonly counts: Readonly<Record<AnalyticsOutcome, number>>;
  /**
   * Identities by refusals (`limited` only), most limited first, at most `topK` of them. Approximate beyond `topK`
   * distinct limited identities in a second on one instance: the observer keeps the first `topK` it sees.
   */
  readonly topLimited: readonly (readonly [identity: string, limited: number])[];
}

/**
 * Where the fleet's analytics meet. Every method may answer synchronously or with a promise.
 *
 * | method    | called by                                     | must guarantee                                                                 |
 * |-----------|-----------------------------------------------|--------------------------------------------------------------------------------|
 * | `publish` | each instance's `createFleetAnalytics`, ≤ 1/s per name | adds the counts (never replaces), in one round trip; keeps them for the retention |
 * | `read`    | dashboards                                     | sums over instances, `from` ≤ second ≤ `to`, ascending, empty seconds left out   |
 * | `names`   | dashboards                                     | the limiter names with a second published within the retention                  |
 */
export interface AnalyticsStore {
  /** Adds one instance's counts for one complete second (increments: several instances sum). One round trip. */
  publish(name: string, seconds: readonly AnalyticsSecond[]): void | PromiseLike<void>;
  /** Sums over instances, seconds in [from, to] inclusive, ascending; seconds with nothing are left out. */
  read(name: string, from: number, to: number): readonly AnalyticsSecond[] | PromiseLike<readonly AnalyticsSecond[]>;
  /** Limiter names that have analytics within the retention. */
  names(): readonly string[] | PromiseLike<readonly string[]>;
}

/** The retention every analytics store and the observer keep by default: 15 minutes. */
export const DEFAULT_ANALYTICS_RETENTION = '15m';

/** How many limited identities a second keeps by default, per instance when published and when read. */
export const DEFAULT_ANALYTICS_TOP_K = 20;

/** Counts of zero for every outcome, for a store to add into. */
export function emptyAnalyticsCounts(): Record<AnalyticsOutcome, number> {
  return { allowed: 0, limited: 0, shadowLimited: 0, shed: 0, degraded: 0 };
}

/**
 * A top list from identity → count: most first, ties by identity (so every store answers the same order), at most
 * `topK` entries. For stores that keep the counts themselves.
 */
export function topEntries(counts: Iterable<readonly [string, number]>, topK: number): (readonly [string, number])[] {
  const entries = [...counts].filter((entry) => entry[1] > 0);
  entries.sort((a, b) => b[1] - a[1] || (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0));
  if (entries.length > topK) entries.length = topK;
  return entries;
}

/** The options every analytics store takes; Redis and Upstash also take a key `prefix`. */
export interface AnalyticsStoreOptions {
  /** Seconds older than this are forgotten (pruned on publish, never read). @default '15m' */
  retention?: Duration;
  /** Limited identities `read` returns per second, summed over instances. @default 20 */
  topK?: number;
  /** Epoch milliseconds, for the retention. Inject a fake clock in tests. @default Date.now */
  now?: () => number;
}

/** An analytics store's options, checked, with their defaults. `prefix` is undefined unless the store takes one. */
export interface AnalyticsStoreSettings {
  readonly prefix: string | undefined;
  readonly retentionSeconds: number;
  readonly topK: number;
  readonly now: () => number;
}

/**
 * Checks an analytics store's options (for store authors): unknown options and bad values throw `INVALID_OPTION`
 * naming `where` and the field. With `{ prefix: true }` a non-empty `prefix` is accepted too (default `'sluice'`).
 */
export function analyticsStoreSettings(options: unknown, where: string, { prefix = false } = {}): AnalyticsStoreSettings {
  if (typeof options !== 'object' || options === null) {
    throw new SluiceError('INVALID_OPTION', `${where}: options must be an object, got ${describe(options)}`);
  }
  const raw = options as AnalyticsStoreOptions & { prefix?: unknown };
  rejectUnknownOptions(raw, prefix ? ['prefix', 'retention', 'topK', 'now'] : ['retention', 'topK', 'now'], where);
  const keyPrefix = prefix ? (raw.prefix ?? 'sluice') : undefined;
  if (prefix && (typeof keyPrefix !== 'string' || keyPrefix.length === 0)) {
    throw new SluiceError('INVALID_OPTION', `${where}: prefix must be a non-empty string, got ${describe(keyPrefix)}`);
  }
  const retentionSeconds = Math.ceil(
    durationOption(raw.retention ?? DEFAULT_ANALYTICS_RETENTION, `${where}: retention`, { min: 1_000 }) / 1000,
  );
  const topK = raw.topK ?? DEFAULT_ANALYTICS_TOP_K;
  if (!Number.isSafeInteger(topK) || topK < 1) {
    throw new SluiceError('INVALID_OPTION', `${where}: topK must be a positive integer, got ${describe(topK)}`);
  }
  const now = clockOption(raw.now, `${where}: now`);
  return { prefix: keyPrefix as string | undefined, retentionSeconds, topK, now };
}
