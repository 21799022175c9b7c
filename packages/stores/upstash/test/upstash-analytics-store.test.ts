/**
 * upstashAnalyticsStore on the fixture over a real Redis (node and edge-runtime), through @upstash/redis and through
 * the store's own REST client: the analytics store contract (two instances sum, an inclusive ascending range without
 * empty seconds, the retention), one request per publish and per read, and the Redis store's key layout.
 */
import { createFleetAnalytics, type AnalyticsSecond, type AnalyticsStore } from '@sluice/core/analytics';
import { beforeEach, describe, expect, it } from 'vitest';
import { upstashAnalyticsStore, upstashRest } from '../src/index.js';
import { client, control, identity, token, url } from './helpers.js';

beforeEach(() => control.reset());

const nowSecond = () => Math.floor(Date.now() / 1000);
const second = (
  at: number,
  counts: Partial<AnalyticsSecond['counts']>,
  topLimited: AnalyticsSecond['topLimited'] = [],
): AnalyticsSecond => ({
  second: at,
  counts: { allowed: 0, limited: 0, shadowLimited: 0, shed: 0, degraded: 0, ...counts },
  topLimited,
});

const CLIENTS: { name: string; make: (prefix: string) => AnalyticsStore }[] = [
  { name: '@upstash/redis', make: (prefix) => upstashAnalyticsStore(client(), { prefix, retention: '1m' }) },
  { name: 'upstashRest', make: (prefix) => upstashAnalyticsStore(upstashRest({ url, token }), { prefix, retention: '1m' }) },
];

describe.each(CLIENTS)('upstashAnalyticsStore through $name', ({ make }) => {
  it('two instances publishing the same second: read returns the sums, one request each', async () => {
    const store = make(identity('sum'));
    const at = nowSecond() - 5;
    await store.publish('api', [
      second(at, { allowed: 10, limited: 3, degraded: 1 }, [
        ['a', 2],
        ['b', 1],
      ]),
    ]);
    await store.publish('api', [
      second(at, { allowed: 5, limited: 4, shadowLimited: 2, shed: 7 }, [
        ['b', 3],
        ['c', 1],
      ]),
    ]);
    expect(await store.read('api', at - 100, at + 100)).toEqual([
      second(at, { allowed: 15, limited: 7, shadowLimited: 2, shed: 7, degraded: 1 }, [
        ['b', 4],
        ['a', 2],
        ['c', 1],
      ]),
    ]);
    expect((await control.stats()).requests).toBe(3);
  });

  it('read is inclusive and ascending without empty seconds; the retention hides old seconds and names', async () => {
    const store = make(identity('range'));
    const base = nowSecond() - 30;
    await store.publish('api', [
      second(base + 4, { allowed: 4 }),
      second(base, { allowed: 1 }),
      second(base + 2, { limited: 2 }, [['x', 2]]),
    ]);
    await store.publish('old', [second(base - 3_600, { allowed: 1 })]);
    expect((await store.read('api', base, base + 4)).map((s) => s.second)).toEqual([base, base + 2, base + 4]);
    expect((await store.read('api', base + 1, base + 3)).map((s) => s.second)).toEqual([base + 2]);
    expect(await store.read('old', base - 7_200, base)).toEqual([]);
    expect(await store.names()).toEqual(['api']);
  });

  it('a createFleetAnalytics observer publishes into it', async () => {
    const store = make(identity('observer'));
    const analytics = createFleetAnalytics({ store });
    const now = Date.now();
    const decision = {
      allowed: false,
      reason: 'rate_limited',
      limit: 1,
      remaining: 0,
      resetAt: 0,
      retryAfter: 1,
      degraded: false,
      rule: 'r',
      rules: [],
      now,
    } as const;
    for (let i = 0; i < 3; i++) analytics.onDecision({ limiter: 'api', operation: 'limit', identity: 'abuser', decision, durationMs: 0 });
    await analytics.stop();
    const seconds = await store.read('api', nowSecond() - 5, nowSecond() + 5);
    expect(seconds.map((s) => [s.counts.limited, s.topLimited])).toEqual([[3, [['abuser', 3]]]]);
  });
});

it('writes the keys redisAnalyticsStore reads: a hash per name and second, a top zset, the names index', async () => {
  const prefix = identity('layout');
  const at = nowSecond();
  await upstashAnalyticsStore(client(), { prefix, retention: '1m' }).publish('api', [second(at, { allowed: 3, limited: 1 }, [['who', 1]])]);
  const raw = client({ automaticDeserialization: false });
  expect(await raw.hgetall(`${prefix}:analytics:{api}:${at}`)).toEqual(['allowed', '3', 'limited', '1']); // flat: no deserialization
  expect(await raw.zrange(`${prefix}:analytics:{api}:${at}:top`, 0, -1, { withScores: true })).toEqual(['who', '1']);
  const ttl = await raw.ttl(`${prefix}:analytics:{api}:${at}`);
  expect(ttl).toBeGreaterThan(50);
  expect(ttl).toBeLessThanOrEqual(60);
});
