/**
 * Bun, for real: fixtures/bun-server.mjs serves the fixture app with Bun.serve on 127.0.0.1, importing the built
 * packages, over five stores: memory, Upstash (@upstash/redis, and the store's own REST client, against the project's Upstash REST fixture over a
 * real redis-server), Redis (ioredis on Bun, against its own redis-server) and tiered (deny-cache over Upstash on the own client).
 * Driven over HTTP from here. The SQLite store is not supported on Bun; the last test pins why.
 */
import { spawnSync } from 'node:child_process';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { startRedis, type RedisServer } from '../harness/redis.js';
import { startUpstashFixture, type UpstashFixture } from '../harness/upstash-fixture.js';
import { describeStores, LIMIT } from './http-limits.js';
import { runtimeBinary, startRuntimeServer, suitesDir, type RuntimeServer } from './runtime-server.js';

let upstashRedis: RedisServer;
let ioredisRedis: RedisServer;
let fixture: UpstashFixture;
let server: RuntimeServer;

beforeAll(async () => {
  const bun = runtimeBinary('bun');
  [upstashRedis, ioredisRedis] = await Promise.all([startRedis(), startRedis()]);
  fixture = await startUpstashFixture({ redisPort: upstashRedis.port });
  server = await startRuntimeServer(bun.path, ['runtimes/fixtures/bun-server.mjs'], {
    UPSTASH_URL: fixture.url,
    UPSTASH_TOKEN: fixture.token,
    REDIS_PORT: String(ioredisRedis.port),
  });
});

afterAll(async () => {
  await server?.stop();
  await fixture?.close();
  await Promise.all([upstashRedis?.stop(), ioredisRedis?.stop()]);
});

it('the server is Bun itself (Bun.version from inside the process), not Node', () => {
  expect(server.reported).toEqual({ runtime: 'bun', version: runtimeBinary('bun').version, limit: LIMIT });
});

describeStores('Bun.serve', 'server.requestIP', () => server.url);

it('the Upstash store went through the REST fixture, and nothing was written to stderr', () => {
  expect(fixture.stats.byCommand.evalsha ?? 0).toBeGreaterThan(0);
  expect(server.stderr()).toBe('');
});

it('SQLite is not supported on Bun: better-sqlite3 (what @sluice/sqlite takes) does not load there', () => {
  // If a Bun release loads it, this fails: test the SQLite store on Bun and update the README's runtime table.
  const run = spawnSync(runtimeBinary('bun').path, ['runtimes/fixtures/open-better-sqlite3.mjs'], {
    cwd: suitesDir,
    encoding: 'utf8',
    timeout: 15_000,
  });
  expect(run.status).not.toBe(0);
  expect(run.stderr).toContain("'better-sqlite3' is not yet supported in Bun");
});
