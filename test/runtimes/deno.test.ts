/**
 * Deno, for real: fixtures/deno-server.mjs serves the fixture app with Deno.serve on 127.0.0.1, importing the
 * built packages from the local node_modules (`--node-modules-dir=manual`, `--cached-only`: nothing is downloaded;
 * network permission only for 127.0.0.1), over five stores: memory, Upstash (@upstash/redis, and the store's own REST client, against the project's
 * Upstash REST fixture over a real redis-server), Redis (ioredis through Deno's node:net, against its own
 * redis-server) and tiered (deny-cache over Upstash on the own client). Driven over HTTP from here. The SQLite store is not
 * supported on Deno; the last test pins why.
 */
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { startRedis, type RedisServer } from '../harness/redis.js';
import { startUpstashFixture, type UpstashFixture } from '../harness/upstash-fixture.js';
import { describeStores, LIMIT } from './http-limits.js';
import { runtimeBinary, startRuntimeServer, suitesDir, type RuntimeServer } from './runtime-server.js';

// Deno's cache (DENO_DIR) in a folder of this run, so it neither reads nor leaves anything in the user's home.
const denoDir = mkdtempSync(join(tmpdir(), 'sluice-deno-'));
const DENO_FLAGS = [
  '--allow-net=127.0.0.1',
  '--allow-env',
  '--allow-read',
  '--node-modules-dir=manual',
  '--cached-only',
  '--no-lock',
  '--no-config',
];

const DENO_ENV = { DENO_DIR: denoDir, DENO_NO_UPDATE_CHECK: '1', DENO_NO_PROMPT: '1' };

let upstashRedis: RedisServer;
let ioredisRedis: RedisServer;
let fixture: UpstashFixture;
let server: RuntimeServer;

beforeAll(async () => {
  const deno = runtimeBinary('deno');
  [upstashRedis, ioredisRedis] = await Promise.all([startRedis(), startRedis()]);
  fixture = await startUpstashFixture({ redisPort: upstashRedis.port });
  server = await startRuntimeServer(deno.path, ['run', ...DENO_FLAGS, 'runtimes/fixtures/deno-server.mjs'], {
    ...DENO_ENV,
    UPSTASH_URL: fixture.url,
    UPSTASH_TOKEN: fixture.token,
    REDIS_PORT: String(ioredisRedis.port),
  });
});

afterAll(async () => {
  await server?.stop();
  await fixture?.close();
  await Promise.all([upstashRedis?.stop(), ioredisRedis?.stop()]);
  rmSync(denoDir, { recursive: true, force: true });
});

it('the server is Deno itself (Deno.version from inside the process), not Node', () => {
  expect(server.reported).toEqual({ runtime: 'deno', version: /^deno (\S+)/.exec(runtimeBinary('deno').version)![1], limit: LIMIT });
});

describeStores('Deno.serve', 'info.remoteAddr', () => server.url);

it('the Upstash store went through the REST fixture, and nothing was written to stderr', () => {
  expect(fixture.stats.byCommand.evalsha ?? 0).toBeGreaterThan(0);
  expect(server.stderr()).toBe('');
});

it('SQLite is not supported on Deno: better-sqlite3 (what @sluice/sqlite takes) is a nan addon, and Deno loads only Node-API ones', () => {
  // Even with every permission (--allow-ffi included). If a Deno release loads it, this fails: test the SQLite store
  // on Deno and update the README's runtime table.
  const run = spawnSync(
    runtimeBinary('deno').path,
    ['run', '--allow-all', ...DENO_FLAGS.slice(3), 'runtimes/fixtures/open-better-sqlite3.mjs'],
    {
      cwd: suitesDir,
      encoding: 'utf8',
      timeout: 15_000,
      env: { ...process.env, ...DENO_ENV, NO_COLOR: '1' },
    },
  );
  expect(run.status).not.toBe(0);
  expect(run.stderr).toMatch(/Cannot load native addon .*better_sqlite3\.node: it was built against the legacy Node\.js native addon API/);
});
