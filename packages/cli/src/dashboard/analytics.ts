/**
 * The dashboard's two reads beyond a limiter's configuration, from the store the connection flags name: the fleet's
 * decisions per second (the analytics store that `fleetAnalytics` publishes to, from the store's own package) and
 * the names of the limiters that have a configuration document (a SCAN on Redis, a SELECT on SQLite; Upstash's
 * are not listed, the page asks for names instead).
 */
import type { Redis } from 'ioredis';
import type { StoreClient } from '../commands/config-connection.js';

export type AnalyticsOutcome = 'allowed' | 'limited' | 'shadowLimited' | 'shed' | 'degraded';
export const OUTCOMES: readonly AnalyticsOutcome[] = ['allowed', 'limited', 'shadowLimited', 'shed', 'degraded'];

/** One second of a limiter's decisions, summed over the instances that published it. */
export interface AnalyticsSecond {
  readonly second: number;
  readonly counts: Readonly<Record<AnalyticsOutcome, number>>;
  readonly topLimited: readonly (readonly [string, number])[];
}

/** The reading half of core's AnalyticsStore (@sluice/core/analytics). */
export interface AnalyticsStore {
  read(name: string, from: number, to: number): readonly AnalyticsSecond[] | PromiseLike<readonly AnalyticsSecond[]>;
  names(): readonly string[] | PromiseLike<readonly string[]>;
}

type Factory = (client: unknown, options?: { prefix?: string }) => AnalyticsStore;

/** The analytics store on the same client, or undefined when the store's package has none (Upstash). */
export async function openAnalytics(store: StoreClient): Promise<AnalyticsStore | undefined> {
  switch (store.kind) {
    case 'redis': {
      const factory = ((await import('@sluice/redis')) as Record<string, unknown>).redisAnalyticsStore as Factory | undefined;
      return factory?.(store.client, store.prefix === undefined ? {} : { prefix: store.prefix });
    }
    case 'sqlite': {
      const factory = ((await import('@sluice/sqlite')) as Record<string, unknown>).sqliteAnalyticsStore as Factory | undefined;
      return factory?.(store.db);
    }
    case 'upstash': {
      const factory = ((await import('@sluice/upstash')) as Record<string, unknown>).upstashAnalyticsStore as Factory | undefined;
      return factory?.(store.client, store.prefix === undefined ? {} : { prefix: store.prefix });
    }
  }
}

/** Lists the names of the limiters with a configuration document, where the store can; undefined where it cannot. */
export function configNameLister(store: StoreClient): (() => Promise<readonly string[]>) | undefined {
  if (store.kind === 'redis') {
    const { client } = store;
    // A Cluster would need a SCAN on every master: not listed, the page asks for names.
    if (client.isCluster) return undefined;
    const prefix = `${store.prefix ?? 'sluice'}:config:`;
    const pattern = `${prefix.replace(/[*?[\]\\]/g, '\\$&')}*`;
    return async () => {
      const names = new Set<string>();
      let cursor = '0';
      do {
        const [next, keys] = await (client as Redis).scan(cursor, 'MATCH', pattern, 'COUNT', 1000);
        for (const key of keys) names.add(key.slice(prefix.length));
        cursor = next;
      } while (cursor !== '0');
      return [...names];
    };
  }
  if (store.kind === 'sqlite') {
    const { db } = store;
    return async () => {
      const table = db.prepare(`SELECT name FROM sqlite_master WHERE type = 'table' AND name = 'sluice_config'`).get();
      if (table === undefined) return [];
      return (db.prepare('SELECT name FROM "sluice_config"').all() as Array<{ name: string }>).map((row) => row.name);
    };
  }
  return undefined;
}
