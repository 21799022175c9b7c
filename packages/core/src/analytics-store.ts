/**
 * The contract of fleet analytics: what one instance publishes for one limiter and one second, and the store every
 * instance publishes into and a dashboard reads from. A store only adds: each instance publishes its own counts,
 * increments, and `read` returns their sums. Implemented by `memoryAnalyticsStore` (@sluice/memory),
 * `redisAnalyticsStore` (@sluice/redis) and `sqliteAnalyticsStore` (@sluice/sqlite).
 */

/**
 * What a decision counts as, one of five:
 * - `degraded`: the store failed and the failure policy answered (allowed or not); it wins over the others;
 * - `shadowLimited`: shadow mode let through what enforce mode would have refused;
 * - `limited`: the limiter refused (the cost too large for a rule included);
 * - `shed`: a load shedder refused (see `fleetAnalytics().onShed` and `recordShed`);
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
 * | `publish` | each instance's `fleetAnalytics`, ≤ 1/s per name | adds the counts (never replaces), in one round trip; keeps them for the retention |
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
