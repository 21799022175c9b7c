import { SluiceError } from '@sluice/core';
import {
  ANALYTICS_OUTCOMES,
  analyticsStoreSettings,
  emptyAnalyticsCounts,
  topEntries,
  type AnalyticsOutcome,
  type AnalyticsSecond,
  type AnalyticsStore,
} from '@sluice/core/analytics';
import { describeValue, nameOption } from '@sluice/core/internal';
import type { Cluster, Redis } from 'ioredis';

export interface RedisAnalyticsStoreOptions {
  /** Keys start `${prefix}:analytics:`. @default 'sluice' */
  prefix?: string;
  /** Each second's keys expire this long after the second; `names()` lists the names published within it. @default '15m' */
  retention?: number | string;
  /** Limited identities `read` returns per second, summed over instances. @default 20 */
  topK?: number;
  /** Epoch milliseconds, for `read`'s and `names()`'s retention window. @default Date.now */
  now?: () => number;
}

/** The ioredis members the store uses; `Redis` and `Cluster` both have them. */
type AnalyticsClient = Pick<Redis, 'multi' | 'pipeline' | 'zadd' | 'zremrangebyscore' | 'zrangebyscore' | 'expire'> & {
  readonly isCluster?: boolean;
};

const WHERE = 'redisAnalyticsStore';

/**
 * Fleet analytics (core's `createFleetAnalytics`) in Redis. The key layout, with `{name}` a Cluster hash tag so one
 * name's keys share a slot:
 *
 * | key                                      | type | holds                                                   | expires           |
 * |------------------------------------------|------|---------------------------------------------------------|-------------------|
 * | `${prefix}:analytics:{name}:<second>`     | hash | `allowed`, `limited`, `shadowLimited`, `shed`, `degraded` | second + retention |
 * | `${prefix}:analytics:{name}:<second>:top` | zset | limited identity → refusals                              | second + retention |
 * | `${prefix}:analytics:names`               | zset | limiter name → latest second published                   | retention          |
 *
 * A publish is one MULTI: HINCRBY per non-zero outcome and ZINCRBY per top identity of each second, EXPIREAT on
 * both keys, ZADD GT on the names index (pruned of names past the retention). On a Cluster the names index is in
 * another slot: it is sent beside the MULTI, in the same turn. A read is one pipeline of HGETALL and ZREVRANGE over
 * the range, clamped to the retention. The client is the user's: the store never closes it.
 * @example createFleetAnalytics({ store: redisAnalyticsStore(redis) })
 */
export function redisAnalyticsStore(client: Redis | Cluster, options: RedisAnalyticsStoreOptions = {}): AnalyticsStore {
  const candidate = client as Partial<AnalyticsClient> | null;
  if (
    typeof candidate !== 'object' ||
    candidate === null ||
    typeof candidate.multi !== 'function' ||
    typeof candidate.pipeline !== 'function'
  ) {
    throw new SluiceError(
      'INVALID_OPTION',
      `${WHERE}: client must be an ioredis Redis or Cluster instance, e.g. redisAnalyticsStore(new Redis()), got ${describeValue(client)}`,
    );
  }
  const { prefix, retentionSeconds, topK, now } = analyticsStoreSettings(options, WHERE, { prefix: true });
  return new RedisAnalyticsStore(client as unknown as AnalyticsClient, `${prefix}:analytics:`, retentionSeconds, topK, now);
}

class RedisAnalyticsStore implements AnalyticsStore {
  private readonly namesKey: string;

  constructor(
    private readonly client: AnalyticsClient,
    private readonly prefix: string,
    private readonly retentionSeconds: number,
    private readonly topK: number,
    private readonly now: () => number,
  ) {
    this.namesKey = `${prefix}names`;
  }

  /** The hash of `name`'s counts for `second`; its top identities are at this key plus `:top`. */
  key(name: string, second: number): string {
    return `${this.prefix}{${name}}:${second}`;
  }

  async publish(name: string, seconds: readonly AnalyticsSecond[]): Promise<void> {
    nameOption(name, `${WHERE}: name`);
    if (seconds.length === 0) return;
    const multi = this.client.multi();
    let latest = -1;
    for (const { second, counts, topLimited } of seconds) {
      const key = this.key(name, second);
      const expireAt = second + this.retentionSeconds;
      for (const outcome of ANALYTICS_OUTCOMES) {
        const count = counts[outcome];
        if (count > 0) multi.hincrby(key, outcome, count);
      }
      multi.expireat(key, expireAt);
      if (topLimited.length > 0) {
        for (const [identity, limited] of topLimited) multi.zincrby(`${key}:top`, limited, identity);
        multi.expireat(`${key}:top`, expireAt);
      }
      if (second > latest) latest = second;
    }
    const cutoff = this.nowSecond() - this.retentionSeconds;
    const index = this.client.isCluster === true ? this.client.multi() : multi;
    index.zadd(this.namesKey, 'GT', latest, name);
    index.zremrangebyscore(this.namesKey, '-inf', `(${cutoff}`);
    index.expire(this.namesKey, this.retentionSeconds);
    await Promise.all(index === multi ? [exec(multi)] : [exec(multi), exec(index)]);
  }

  async read(name: string, from: number, to: number): Promise<readonly AnalyticsSecond[]> {
    nameOption(name, `${WHERE}: name`);
    const nowSecond = this.nowSecond();
    // Keys older than the retention have expired; a second further ahead than the retention is no clock's skew.
    const low = Math.max(Math.ceil(from), nowSecond - this.retentionSeconds);
    const high = Math.min(Math.floor(to), nowSecond + this.retentionSeconds);
    if (!(low <= high)) return [];
    const pipeline = this.client.pipeline();
    for (let second = low; second <= high; second++) {
      const key = this.key(name, second);
      pipeline.hgetall(key);
      pipeline.zrevrange(`${key}:top`, 0, -1, 'WITHSCORES');
    }
    const replies = (await pipeline.exec()) ?? [];
    const seconds: AnalyticsSecond[] = [];
    for (let i = 0, second = low; second <= high; second++, i += 2) {
      const [hashError, hash] = replies[i] ?? [new Error('no reply')];
      const [topError, top] = replies[i + 1] ?? [new Error('no reply')];
      if (hashError) throw hashError;
      if (topError) throw topError;
      const fields = hash as Record<string, string> | null;
      if (fields === null || Object.keys(fields).length === 0) continue;
      const counts: Record<AnalyticsOutcome, number> = emptyAnalyticsCounts();
      for (const outcome of ANALYTICS_OUTCOMES) counts[outcome] = Number(fields[outcome] ?? 0);
      const flat = top as string[];
      const entries: [string, number][] = [];
      for (let j = 0; j + 1 < flat.length; j += 2) entries.push([flat[j]!, Number(flat[j + 1])]);
      seconds.push({ second, counts, topLimited: topEntries(entries, this.topK) });
    }
    return seconds;
  }

  async names(): Promise<readonly string[]> {
    const cutoff = this.nowSecond() - this.retentionSeconds;
    const names = await this.client.zrangebyscore(this.namesKey, cutoff, '+inf');
    return names.sort();
  }

  private nowSecond(): number {
    return Math.floor(this.now() / 1000);
  }
}

/** Runs a MULTI; the first command's error is the publish's. */
async function exec(multi: ReturnType<AnalyticsClient['multi']>): Promise<void> {
  const replies = await multi.exec();
  if (replies === null) throw new SluiceError('STORE_ERROR', `${WHERE}: the MULTI was aborted`);
  for (const [error] of replies) if (error) throw error;
}
