/**
 * The bug this pins: `npm install ioredis` installs ioredis 6, and `@sluice/redis` declared the peer `^5.0.0`, so
 * installs warned and later failed with ERESOLVE. The store supports both majors: its peer range names both, its
 * source typechecks against either's types, and the store's core behaviours (a decision with compound rules through
 * FCALL and EVALSHA, a batch of concurrent decisions, recovery after the server restarts) run on a real redis-server
 * through each major's client with its defaults (ioredis 6 speaks RESP3 by default).
 */
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { createLimiter, fixedWindow, gcra, tokenBucket } from '@sluice/core';
import { startRedis, type RedisServer } from '../harness/redis.js';
import { MAJORS } from './ioredis-majors.js';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '../..');
const storeDir = join(root, 'packages/stores/redis');

let server: RedisServer;
beforeAll(async () => {
  server = await startRedis();
});
afterAll(async () => {
  await server?.stop();
});

describe('@sluice/redis supports ioredis 5 and 6', () => {
  test('the peer range accepts both installed majors', () => {
    const manifest = JSON.parse(readFileSync(join(storeDir, 'package.json'), 'utf8')) as { peerDependencies: Record<string, string> };
    const alternatives = manifest.peerDependencies.ioredis!.split('||').map((range) => range.trim());
    for (const { major, version } of MAJORS) {
      expect(version.split('.')[0]).toBe(String(major));
      expect(alternatives, `peer range for ioredis ${version}`).toContain(`^${major}.0.0`);
    }
  });

  test("the store's source typechecks against ioredis 6's types", () => {
    const dir = mkdtempSync(join(tmpdir(), 'sluice-ioredis6-types-'));
    try {
      const config = join(dir, 'tsconfig.json');
      const ioredis6 = dirname(fileURLToPath(import.meta.resolve('ioredis6/package.json')));
      writeFileSync(
        config,
        JSON.stringify({
          extends: join(storeDir, 'tsconfig.json'),
          compilerOptions: {
            noEmit: true,
            baseUrl: storeDir,
            typeRoots: [join(storeDir, 'node_modules/@types')],
            paths: { ioredis: [ioredis6] },
          },
          include: [join(storeDir, 'src')],
        }),
      );
      const tsc = spawnSync(process.execPath, [join(root, 'node_modules/typescript/bin/tsc'), '-p', config, '--traceResolution'], {
        encoding: 'utf8',
        timeout: 120_000,
      });
      const errors = tsc.stdout.split('\n').filter((line) => line.includes('error TS'));
      expect(errors).toEqual([]);
      expect(tsc.status).toBe(0);
      expect(tsc.stdout).toMatch(/Module name 'ioredis' was successfully resolved to '[^']*ioredis@6\.[^']*'/);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  }, 120_000);
});

describe.each(MAJORS)('the store on ioredis $major ($version)', ({ major, connect, redisStore }) => {
  for (const functions of [true, false]) {
    test(`limit: compound rules all-or-nothing, peek and refund (${functions ? 'FCALL' : 'EVALSHA'})`, async () => {
      const client = connect(server.port);
      try {
        const rules = [tokenBucket({ capacity: 3, refillRate: 1, interval: '1h' }), fixedWindow({ limit: 2, window: '1h' })];
        const limiter = createLimiter({ store: redisStore(client, { functions }), rules, name: `v${major}-limit-${functions}` });
        expect(await limiter.limit('a')).toMatchObject({ allowed: true, remaining: 1, degraded: false });
        expect(await limiter.limit('a')).toMatchObject({ allowed: true, remaining: 0 });
        const denied = await limiter.limit('a');
        expect(denied).toMatchObject({ allowed: false, reason: 'rate_limited', rule: 'fw:3600000' });
        expect(denied.rules.find((r) => r.id.startsWith('tb'))?.remaining).toBe(1); // the bucket gave nothing
        await limiter.refund('a');
        expect(await limiter.peek('a')).toMatchObject({ allowed: true, remaining: 1 });
      } finally {
        client.disconnect();
      }
    });
  }

  test('batch: 40 concurrent decisions against a limit of 25 admit exactly 25, in fewer calls than decisions', async () => {
    const client = connect(server.port);
    try {
      const limiter = createLimiter({
        store: redisStore(client),
        rules: gcra({ limit: 25, period: '1h', burst: 25 }),
        name: `v${major}-batch`,
      });
      await client.config('RESETSTAT');
      const decisions = await Promise.all(Array.from({ length: 40 }, () => limiter.limit('hot')));
      expect(decisions.filter((d) => d.allowed)).toHaveLength(25);
      expect(decisions.every((d) => !d.degraded)).toBe(true);
      const stats = String(await client.info('commandstats'));
      const calls = [...stats.matchAll(/cmdstat_(?:fcall|evalsha|eval):calls=(\d+)/g)].reduce((sum, m) => sum + Number(m[1]), 0);
      expect(calls).toBeGreaterThan(0);
      expect(calls).toBeLessThan(40);
    } finally {
      client.disconnect();
    }
  });

  test('reconnect: the server is killed and restarted on the same port; the store answers again without app action', async () => {
    const own = await startRedis();
    const client = connect(own.port);
    try {
      const limiter = createLimiter({
        store: redisStore(client),
        rules: fixedWindow({ limit: 5, window: '1h' }),
        name: `v${major}-reconnect`,
      });
      expect(await limiter.limit('r')).toMatchObject({ allowed: true, remaining: 4, degraded: false });
      await own.kill();
      // Once the client has seen the connection drop: a command written before that is ioredis's to resend on
      // reconnect (see the README's outage section), which would make the count below depend on the race.
      if (client.status === 'ready') await new Promise<void>((r) => client.once('close', () => r()));
      expect(await limiter.limit('r')).toMatchObject({ degraded: true, reason: 'store_unavailable' });
      await own.restart(); // empty (no persistence), and without the Function: the store loads it again
      if (client.status !== 'ready') await new Promise<void>((r) => client.once('ready', () => r()));
      expect(await limiter.limit('r')).toMatchObject({ allowed: true, remaining: 4, degraded: false });
    } finally {
      client.disconnect();
      await own.stop();
    }
  });
});
