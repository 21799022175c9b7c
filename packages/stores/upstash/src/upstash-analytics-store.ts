import {
  ANALYTICS_OUTCOMES,
  analyticsStoreSettings,
  emptyAnalyticsCounts,
  topEntries,
  type AnalyticsSecond,
  type AnalyticsStore,
} from '@sluice/core/analytics';
import { describeValue, nameOption } from '@sluice/core/internal';
import { ANALYTICS_PUBLISH_SCRIPT, ANALYTICS_READ_SCRIPT } from '@sluice/redis-script';
import type { UpstashRestOptions } from './upstash-rest.js';
import { notAnUpstashClient, restClientFor } from './upstash-store.js';

/** The method of @upstash/redis's `Redis` (or `upstashRest()`) the analytics store calls. */
export interface UpstashAnalyticsClient {
  eval(script: string, keys: string[], args: Array<string | number>): Promise<unknown>;
}

export interface UpstashAnalyticsStoreOptions {
  /** Keys start `${prefix}:analytics:` (the Redis store's layout). @default 'sluice' */
  prefix?: string;
  /** Each second's keys expire this long after the second; `names()` lists the names published within it. @default '15m' */
  retention?: number | string;
  /** Limited identities `read` returns per second, summed over instances. @default 20 */
  topK?: number;
  /** Epoch milliseconds, for `read`'s and `names()`'s retention window. @default Date.now */
  now?: () => number;
}

const WHERE = 'upstashAnalyticsStore';

/**
 * Fleet analytics (core's `createFleetAnalytics`) in Upstash Redis, with the keys `redisAnalyticsStore` uses (see
 * @sluice/redis's README), so either client reads what the other published. Each call is one request: a publish is
 * one EVAL (src/lua/analytics.lua of @sluice/redis-script), a read one EVAL over the range clamped to the retention,
 * `names()` one EVAL. Edge-safe. `{ url, token }` uses the store's own client (`upstashRest()`). With
 * @upstash/redis's default `automaticDeserialization`, an identity that is JSON text (`{"a":1}`) comes back parsed:
 * pass `automaticDeserialization: false` to read such identities exactly.
 * @example createFleetAnalytics({ store: upstashAnalyticsStore({ url: env.UPSTASH_REDIS_REST_URL, token: env.UPSTASH_REDIS_REST_TOKEN }) })
 */
export function upstashAnalyticsStore(
  client: UpstashAnalyticsClient | UpstashRestOptions,
  options: UpstashAnalyticsStoreOptions = {},
): AnalyticsStore {
  const redis = restClientFor(client);
  if (typeof redis !== 'object' || redis === null || typeof (redis as Partial<UpstashAnalyticsClient>).eval !== 'function') {
    throw notAnUpstashClient(WHERE, describeValue(redis));
  }
  const { prefix, retentionSeconds, topK, now } = analyticsStoreSettings(options, WHERE, { prefix: true });
  const base = `${prefix}:analytics:`;
  const namesKey = `${base}names`;
  const key = (name: string, second: number) => `${base}{${name}}:${second}`;
  const nowSecond = () => Math.floor(now() / 1000);

  return {
    async publish(name, seconds) {
      nameOption(name, `${WHERE}: name`);
      if (seconds.length === 0) return;
      const keys = [namesKey];
      const args: Array<string | number> = [name, retentionSeconds, nowSecond() - retentionSeconds];
      for (const { second, counts, topLimited } of seconds) {
        keys.push(key(name, second), `${key(name, second)}:top`);
        args.push(second, ...ANALYTICS_OUTCOMES.map((outcome) => counts[outcome] ?? 0), topLimited.length);
        for (const [identity, limited] of topLimited) args.push(identity, limited);
      }
      await redis.eval(ANALYTICS_PUBLISH_SCRIPT, keys, args);
    },
    async read(name, from, to) {
      nameOption(name, `${WHERE}: name`);
      const current = nowSecond();
      const low = Math.max(Math.ceil(from), current - retentionSeconds);
      const high = Math.min(Math.floor(to), current + retentionSeconds);
      if (!(low <= high)) return [];
      const keys: string[] = [];
      for (let second = low; second <= high; second++) keys.push(key(name, second), `${key(name, second)}:top`);
      const replies = (await redis.eval(ANALYTICS_READ_SCRIPT, keys, ['read'])) as unknown[][];
      const seconds: AnalyticsSecond[] = [];
      for (let i = 0, second = low; second <= high; second++, i += 2) {
        const hash = replies[i] ?? [];
        if (hash.length === 0) continue;
        const counts = emptyAnalyticsCounts();
        for (let j = 0; j + 1 < hash.length; j += 2) {
          const field = String(hash[j]) as keyof typeof counts;
          if (field in counts) counts[field] = Number(hash[j + 1]);
        }
        const top = replies[i + 1] ?? [];
        const entries: [string, number][] = [];
        for (let j = 0; j + 1 < top.length; j += 2) entries.push([String(top[j]), Number(top[j + 1])]);
        seconds.push({ second, counts, topLimited: topEntries(entries, topK) });
      }
      return seconds;
    },
    async names() {
      const names = (await redis.eval(ANALYTICS_READ_SCRIPT, [namesKey], ['names', nowSecond() - retentionSeconds])) as unknown[];
      return names.map(String).sort();
    },
  };
}
