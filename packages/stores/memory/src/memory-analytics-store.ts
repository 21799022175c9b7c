import {
  ANALYTICS_OUTCOMES,
  analyticsStoreSettings,
  emptyAnalyticsCounts,
  topEntries,
  type AnalyticsOutcome,
  type AnalyticsSecond,
  type AnalyticsStore,
} from '@sluice/core/analytics';

export interface MemoryAnalyticsStoreOptions {
  /** Seconds older than this are forgotten (pruned on publish, never read). @default '15m' */
  retention?: number | string;
  /** Limited identities `read` returns per second, summed over instances. @default 20 */
  topK?: number;
  /** Epoch milliseconds, for the retention. Inject a fake clock in tests. @default Date.now */
  now?: () => number;
}

/** One name's second: the sums of every publish. */
interface StoredSecond {
  readonly counts: Record<AnalyticsOutcome, number>;
  readonly top: Map<string, number>;
}

const WHERE = 'memoryAnalyticsStore';

/**
 * Fleet analytics (core's `createFleetAnalytics`) kept in this process: for one process, tests and the dashboard's demo.
 * Every publish adds into the second's sums; seconds older than `retention` are pruned on publish and never read.
 * @example createFleetAnalytics({ store: memoryAnalyticsStore() })
 */
export function memoryAnalyticsStore(options: MemoryAnalyticsStoreOptions = {}): AnalyticsStore {
  const { retentionSeconds, topK, now } = analyticsStoreSettings(options, WHERE);
  /** name → second → sums. */
  const names = new Map<string, Map<number, StoredSecond>>();
  const oldest = () => Math.floor(now() / 1000) - retentionSeconds;

  return {
    publish(name, seconds) {
      let stored = names.get(name);
      if (stored === undefined) names.set(name, (stored = new Map()));
      const cutoff = oldest();
      for (const second of seconds) {
        if (second.second < cutoff) continue;
        let sums = stored.get(second.second);
        if (sums === undefined) stored.set(second.second, (sums = { counts: emptyAnalyticsCounts(), top: new Map() }));
        for (const outcome of ANALYTICS_OUTCOMES) sums.counts[outcome] += second.counts[outcome] ?? 0;
        for (const [identity, limited] of second.topLimited) sums.top.set(identity, (sums.top.get(identity) ?? 0) + limited);
      }
      for (const second of stored.keys()) if (second < cutoff) stored.delete(second);
      if (stored.size === 0) names.delete(name);
    },
    read(name, from, to) {
      const stored = names.get(name);
      if (stored === undefined) return [];
      const low = Math.max(from, oldest());
      const seconds: AnalyticsSecond[] = [];
      for (const [second, sums] of stored) {
        if (second >= low && second <= to) seconds.push({ second, counts: { ...sums.counts }, topLimited: topEntries(sums.top, topK) });
      }
      return seconds.sort((a, b) => a.second - b.second);
    },
    names() {
      const cutoff = oldest();
      const live: string[] = [];
      for (const [name, stored] of names) {
        for (const second of stored.keys()) {
          if (second >= cutoff) {
            live.push(name);
            break;
          }
        }
      }
      return live.sort();
    },
  };
}
