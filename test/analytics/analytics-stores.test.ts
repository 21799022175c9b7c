/**
 * The analytics store contract, run against every store on real backends (a redis-server and a three-master Redis
 * Cluster started here, a SQLite file in a temporary directory): two instances publish into one store and `read`
 * sums them, a range is inclusive and ascending with empty seconds left out, seconds past the retention are neither
 * read nor named, and two real `createFleetAnalytics` observers publishing through `stop()` add up to the decisions their
 * limiters made. Upstash runs the same checks on its REST fixture (packages/stores/upstash/test).
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import Database from 'better-sqlite3';
import { Cluster, Redis } from 'ioredis';
import { createLimiter, fixedWindow } from '@sluice/core';
import { createFleetAnalytics, type AnalyticsSecond, type AnalyticsStore } from '@sluice/core/analytics';
import { memoryAnalyticsStore, memoryStore } from '@sluice/memory';
import { redisAnalyticsStore } from '@sluice/redis';
import { sqliteAnalyticsStore } from '@sluice/sqlite';
import { startCluster, startRedis, type RedisCluster, type RedisServer } from '../harness/redis.js';

let server: RedisServer;
let redis: Redis;
let cluster: RedisCluster;
let clusterClient: Cluster;
let stores = 0;
const directory = mkdtempSync(join(tmpdir(), 'sluice-analytics-'));
const databases: Database.Database[] = [];

beforeAll(async () => {
  [server, cluster] = await Promise.all([startRedis(), startCluster()]);
  redis = new Redis({ host: server.host, port: server.port });
  clusterClient = new Cluster([...cluster.nodes]);
  await new Promise<void>((resolve, reject) => {
    clusterClient.once('ready', () => resolve());
    clusterClient.once('error', reject);
  });
});

afterAll(async () => {
  redis?.disconnect();
  clusterClient?.disconnect();
  await cluster?.stop();
  for (const db of databases) db.close();
  rmSync(directory, { recursive: true, force: true });
  await server?.stop();
});

/** A fresh SQLite file, opened as each process of a fleet would open it. */
function sqliteFile(): Database.Database {
  const db = new Database(join(directory, `analytics${++stores}.db`));
  db.pragma('journal_mode = WAL');
  databases.push(db);
  return db;
}

/** Each factory makes an empty store with a one-minute retention. */
const FACTORIES: { name: string; make: () => AnalyticsStore }[] = [
  { name: 'memory', make: () => memoryAnalyticsStore({ retention: '1m' }) },
  { name: 'redis', make: () => redisAnalyticsStore(redis, { prefix: `conformance${++stores}`, retention: '1m' }) },
  { name: 'redis cluster', make: () => redisAnalyticsStore(clusterClient, { prefix: `conformance${++stores}`, retention: '1m' }) },
  { name: 'sqlite', make: () => sqliteAnalyticsStore(sqliteFile(), { retention: '1m' }) },
];

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

describe.each(FACTORIES)('analytics store: $name', ({ make }) => {
  test('two instances publishing the same second: read returns the sums, top identities summed and ordered', async () => {
    const store = make();
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
    expect(await store.read('api', at, at)).toEqual([
      second(at, { allowed: 15, limited: 7, shadowLimited: 2, shed: 7, degraded: 1 }, [
        ['b', 4],
        ['a', 2],
        ['c', 1],
      ]),
    ]);
    expect(await store.read('other', at, at)).toEqual([]);
  });

  test('read is inclusive of both ends, ascending, and leaves empty seconds out; names lists the limiters', async () => {
    const store = make();
    const base = nowSecond() - 30;
    await store.publish('api', [
      second(base + 4, { allowed: 4 }),
      second(base, { allowed: 1 }),
      second(base + 2, { limited: 2 }, [['x', 2]]),
    ]);
    await store.publish('web', [second(base + 1, { shed: 1 })]);
    const read = await store.read('api', base, base + 4);
    expect(read.map((s) => s.second)).toEqual([base, base + 2, base + 4]);
    expect((await store.read('api', base + 1, base + 3)).map((s) => s.second)).toEqual([base + 2]);
    expect(await store.read('api', base + 5, base + 10)).toEqual([]);
    expect(await store.read('api', base + 4, base)).toEqual([]);
    expect([...(await store.names())].sort()).toEqual(['api', 'web']);
  });

  test('seconds older than the retention are not read, and a name with only those is not listed', async () => {
    const store = make();
    const now = nowSecond();
    await store.publish('old', [second(now - 3_600, { allowed: 1 })]);
    await store.publish('mixed', [second(now - 3_600, { allowed: 1 }), second(now - 10, { allowed: 2 })]);
    expect(await store.read('old', now - 7_200, now)).toEqual([]);
    expect(await store.read('mixed', now - 7_200, now)).toEqual([second(now - 10, { allowed: 2 })]);
    expect([...(await store.names())]).toEqual(['mixed']);
  });

  test('two createFleetAnalytics instances publishing through their timers sum to the decisions their limiters made', async () => {
    const store = make();
    const rules = fixedWindow({ id: 'w', limit: 5, window: '1h' });
    const instances = [0, 1].map(() => {
      const analytics = createFleetAnalytics({ store });
      const limiter = createLimiter({ store: memoryStore(), rules, name: 'fleet', onDecision: analytics.onDecision });
      return { analytics, limiter };
    });
    const from = nowSecond();
    for (const { limiter } of instances) {
      for (let i = 0; i < 8; i++) limiter.limitSync('abuser');
      for (let i = 0; i < 3; i++) limiter.limitSync(`user${i}`);
    }
    await Promise.all(instances.map(({ analytics }) => analytics.stop()));
    const seconds = await store.read('fleet', from - 1, nowSecond() + 1);
    const sum = (key: 'allowed' | 'limited') => seconds.reduce((total, s) => total + s.counts[key], 0);
    expect(sum('allowed')).toBe(2 * (5 + 3));
    expect(sum('limited')).toBe(2 * 3);
    const abuser = seconds.flatMap((s) => s.topLimited).filter(([identity]) => identity === 'abuser');
    expect(abuser.reduce((total, [, n]) => total + n, 0)).toBe(6);
  });
});

describe('sqliteAnalyticsStore', () => {
  test('two connections to one file are two instances: each publish adds, either connection reads the sums', async () => {
    const file = join(directory, 'shared.db');
    const [a, b] = [new Database(file), new Database(file)];
    databases.push(a, b);
    const at = nowSecond();
    await sqliteAnalyticsStore(a).publish('api', [second(at, { limited: 2 }, [['x', 2]])]);
    await sqliteAnalyticsStore(b).publish('api', [second(at, { limited: 1 }, [['x', 1]])]);
    expect(await sqliteAnalyticsStore(a).read('api', at, at)).toEqual([second(at, { limited: 3 }, [['x', 3]])]);
    expect(a.prepare('SELECT count(*) AS n FROM sluice_analytics_top').get()).toEqual({ n: 1 });
  });
});

describe('redisAnalyticsStore', () => {
  test('the key layout: a hash per name and second, a top zset beside it, both expiring; a names index', async () => {
    const store = redisAnalyticsStore(redis, { prefix: 'layout', retention: '1m' });
    const at = nowSecond();
    await store.publish('api', [second(at, { allowed: 3, limited: 1 }, [['who', 1]])]);
    expect(await redis.hgetall(`layout:analytics:{api}:${at}`)).toEqual({ allowed: '3', limited: '1' });
    expect(await redis.zrange(`layout:analytics:{api}:${at}:top`, 0, -1, 'WITHSCORES')).toEqual(['who', '1']);
    const ttl = await redis.ttl(`layout:analytics:{api}:${at}`);
    expect(ttl).toBeGreaterThan(50);
    expect(ttl).toBeLessThanOrEqual(60);
    expect(await redis.zrange('layout:analytics:names', 0, -1, 'WITHSCORES')).toEqual(['api', String(at)]);
  });
});
