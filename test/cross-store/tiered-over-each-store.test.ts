/**
 * @sluice/tiered over each shared store it is meant for: SQLite (a real file), Redis (a redis-server started here)
 * and Upstash (the REST fixture over that redis-server, through the real @upstash/redis client). Two tiers share
 * the store, as two processes would; in every strategy they keep the strategy's bound on a fixed window, and lease
 * and deny-cache answer most decisions without a remote call.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { Redis as IORedis } from 'ioredis';
import { Redis as UpstashRedis } from '@upstash/redis';
import { createLimiter, fixedWindow, type Store } from '@sluice/core';
import { redisStore } from '@sluice/redis';
import { sqliteStore } from '@sluice/sqlite';
import { tieredStore, type TierStrategy } from '@sluice/tiered';
import { upstashStore } from '@sluice/upstash';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { requireRedisBinaries, startRedis, type RedisServer } from '../harness/redis.js';
import { startUpstashFixture, type UpstashFixture } from '../harness/upstash-fixture.js';

let server: RedisServer;
let fixture: UpstashFixture;
let ioredis: IORedis;
let dir: string;
let db: Database.Database;

beforeAll(async () => {
  requireRedisBinaries();
  server = await startRedis();
  fixture = await startUpstashFixture({ redisPort: server.port });
  ioredis = new IORedis({ host: server.host, port: server.port, lazyConnect: false });
  dir = mkdtempSync(join(tmpdir(), 'sluice-tiered-'));
  db = new Database(join(dir, 'limits.db'));
}, 30_000);

afterAll(async () => {
  ioredis?.disconnect();
  db?.close();
  await fixture?.close();
  await server?.stop();
  if (dir !== undefined) rmSync(dir, { recursive: true, force: true });
});

const REMOTES: ReadonlyArray<readonly [string, () => Store]> = [
  ['sqlite', () => sqliteStore(db)],
  ['redis', () => redisStore(ioredis)],
  ['upstash', () => upstashStore(new UpstashRedis({ url: fixture.url, token: fixture.token, enableTelemetry: false }))],
];

const LIMIT = 30;
const MAX_UNSYNCED = 4;

describe.each(REMOTES)('tiered over %s', (remoteName, makeRemote) => {
  it.each(['deny-cache', 'lease', 'async'] as const)('%s: two tiers keep the bound on a fixed window', async (strategy: TierStrategy) => {
    const remote = makeRemote();
    const tiers = [0, 1].map(() =>
      tieredStore({ remote, instances: 2, strategy, async: { flushEvery: 2, maxUnsynced: MAX_UNSYNCED }, timeout: '2s' }),
    );
    // A window of an hour: a run of a second or two almost never straddles a boundary, and when it does the
    // counts are split by window (decision.now), so the bound is still checked exactly.
    const rule = fixedWindow({ limit: LIMIT, window: '1h' });
    const name = `t${remoteName}${strategy.replace('-', '')}${Date.now() % 100000}`;
    const limiters = tiers.map((store) => createLimiter({ store, rules: rule, name, timeout: '3s' }));
    const perWindow = new Map<number, number>();
    let degraded = 0;
    for (let round = 0; round < 25; round++) {
      const answers = await Promise.all(limiters.flatMap((limiter) => Array.from({ length: 4 }, () => limiter.limit('hot'))));
      for (const d of answers) {
        if (d.degraded) degraded++;
        if (!d.allowed) continue;
        const window = Math.floor(d.now / 3_600_000);
        perWindow.set(window, (perWindow.get(window) ?? 0) + 1);
      }
    }
    for (const store of tiers) await store.close();
    expect(degraded).toBe(0);
    const bound = strategy === 'async' ? LIMIT + 2 * MAX_UNSYNCED : LIMIT;
    for (const admitted of perWindow.values()) expect(admitted).toBeLessThanOrEqual(bound);
    // 200 decisions on a limit of 30: the limit was reached (no strategy starved the identity).
    if (perWindow.size === 1) expect([...perWindow.values()][0]).toBeGreaterThanOrEqual(LIMIT);
    const stats = tiers.map((t) => t.stats());
    const decisions = stats.reduce((sum, s) => sum + s.decisions, 0);
    const remoteCalls = stats.reduce((sum, s) => sum + s.remoteCalls, 0);
    expect(decisions).toBe(200);
    // Most decisions never left the process: refusals (every strategy) and admissions (lease, async).
    expect(remoteCalls).toBeLessThan(decisions / 2);
  });
});
