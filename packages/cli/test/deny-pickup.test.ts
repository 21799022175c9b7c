/**
 * A deny entry added by the CLI (the built binary, its own process) reaches limiters that watch the configuration in
 * one redis-server (started here), each through its own ioredis client: two hear the change by pub/sub, their
 * periodic read set to a minute so that it takes no part (seeing the entry within the wait can only be the push);
 * one has a source that cannot push (as SQLite and Upstash cannot: no subscribe, on the document or the deny
 * structure) and reads the change at its next refresh (500 ms). Removal is heard the same way. How long the pick-up
 * takes is measured by the bench (pnpm bench http-deny), not asserted here: a loaded CI machine decides that.
 */
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { createLimiter, fixedWindow, type Limiter } from '@sluice/core';
import { watchConfig, type ConfigSource, type ConfigWatcher, type ConfigWarning } from '@sluice/core/config';
import { memoryStore } from '@sluice/memory';
import { redisConfigSource } from '@sluice/redis';
import { startRedis, type RedisServer } from '../../../test/harness/redis.js';
import { sluice } from './run-cli.js';

const REFRESH_MS = 500;
/** How long a change may take to arrive: far less than the pushing instances' periodic read (a minute). */
const WAIT_MS = 10_000;

interface Instance {
  label: string;
  client: Redis;
  limiter: Limiter;
  watcher: ConfigWatcher;
  pushes: boolean;
}

let server: RedisServer;
const instances: Instance[] = [];
const warnings: ConfigWarning[] = [];

async function instance(label: string, pushes: boolean): Promise<Instance> {
  const client = new Redis({ host: server.host, port: server.port });
  const full = redisConfigSource(client);
  // A source that cannot push (as SQLite and Upstash cannot): the periodic read is its only way to hear a change.
  const source: ConfigSource = pushes
    ? full
    : {
        read: (name) => full.read(name),
        write: (name, text) => full.write(name, text),
        remove: (name) => full.remove(name),
        deny: {
          change: (name, change) => full.deny.change(name, change),
          readChanges: (name, since) => full.deny.readChanges(name, since),
          readPage: (name, cursor, count) => full.deny.readPage(name, cursor, count),
        },
      };
  const limiter = createLimiter({ store: memoryStore(), rules: fixedWindow({ limit: 20, window: '1h' }), name: 'api' });
  const watcher = watchConfig(limiter, source, {
    refresh: pushes ? '1m' : REFRESH_MS,
    onWarning: (warning) => void warnings.push(warning),
  });
  await watcher.ready;
  return { label, client, limiter, watcher, pushes };
}

/** Runs `change` and answers, per instance, when (epoch ms) its limiter's deny list first satisfied `seen`. */
async function timesSeen(change: () => Promise<void>, seen: (deny: Limiter['deny']) => boolean): Promise<Map<string, number>> {
  const times = new Map<string, number>();
  const poll = setInterval(() => {
    for (const { label, limiter } of instances) if (!times.has(label) && seen(limiter.deny)) times.set(label, Date.now());
  }, 1);
  try {
    await change();
    const deadline = Date.now() + WAIT_MS;
    while (times.size < instances.length && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 5));
  } finally {
    clearInterval(poll);
  }
  return times;
}

beforeAll(async () => {
  server = await startRedis();
  instances.push(await instance('pubsub-1', true), await instance('pubsub-2', true), await instance('refresh-only', false));
});

afterAll(async () => {
  for (const { watcher, client } of instances) {
    await watcher.stop();
    client.disconnect();
  }
  await server?.stop();
});

describe('a deny entry written by the CLI reaches watching limiters', () => {
  const at = () => ['--name', 'api', '--redis', `redis://127.0.0.1:${server.port}`];

  test('by pub/sub (their periodic read a minute away), and by the periodic read where the source cannot push', async () => {
    const added = await timesSeen(
      async () => {
        const run = await sluice(['config', 'deny', 'add', '203.0.113.0/24', '--reason', 'scraper', ...at()]);
        expect(run.code, run.stderr).toBe(0);
      },
      (deny) => deny.some((entry) => entry.match === '203.0.113.0/24'),
    );
    expect([...added.keys()].sort()).toEqual(['pubsub-1', 'pubsub-2', 'refresh-only']);
    for (const { limiter } of instances)
      expect(limiter.deny).toEqual([expect.objectContaining({ match: '203.0.113.0/24', reason: 'scraper' })]);

    const removed = await timesSeen(
      async () => {
        const run = await sluice(['config', 'deny', 'remove', '203.0.113.0/24', ...at()]);
        expect(run.code, run.stderr).toBe(0);
      },
      (deny) => deny.length === 0,
    );
    expect([...removed.keys()].sort()).toEqual(['pubsub-1', 'pubsub-2', 'refresh-only']);
    expect(warnings).toEqual([]);
  });
});
