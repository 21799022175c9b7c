/**
 * The dashboard's two reads beyond a limiter's configuration, from the store the connection flags name: the fleet's
 * decisions per second (the analytics store that `createFleetAnalytics` publishes to, from the store's own package) and
 * the names of the limiters that have a configuration document (a SCAN on Redis, a SELECT on SQLite; Upstash's
 * are not listed: the page shows the names that publish analytics and asks for the others).
 */
import type { AnalyticsStore } from '@sluice/core/analytics';
import type { Redis } from 'ioredis';
import type { StoreClient } from '../commands/config-connection.js';

/** The analytics store on the same client. */
export async function openAnalytics(store: StoreClient): Promise<AnalyticsStore | undefined> {
  switch (store.kind) {
    case 'redis': {
      const { redisAnalyticsStore } = await import('@sluice/redis');
      return redisAnalyticsStore(store.client, store.prefix === undefined ? {} : { prefix: store.prefix });
    }
    case 'sqlite': {
      const { sqliteAnalyticsStore } = await import('@sluice/sqlite');
      return sqliteAnalyticsStore(store.db);
    }
    case 'upstash': {
      const { upstashAnalyticsStore } = await import('@sluice/upstash');
      return upstashAnalyticsStore(store.client, store.prefix === undefined ? {} : { prefix: store.prefix });
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
