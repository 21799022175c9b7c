/**
 * A deny entry added by the CLI (the built binary, its own process) reaches limiters that watch the document in
 * one redis-server (started here), each through its own ioredis client: two hear the change by pub/sub and read
 * it within the push latency, so their periodic read is set to a minute to take no part; one cannot subscribe and
 * reads it at its next refresh (500 ms). Times run from the entry's addedAt (the CLI's clock, stamped just before
 * its write) to the first moment the limiter's `deny` holds the entry; removal is heard the same way.
 */
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { createLimiter, fixedWindow, type Limiter } from '@sluice/core';
import { watchConfig, type ConfigSource, type ConfigWatcher, type ConfigWarning } from '@sluice/core/config';
import { memoryStore } from '@sluice/memory';
import { redisConfigSource } from '@sluice/redis';
import { startRedis, type RedisServer } from '../../../test/harness/redis.js';
import { sluice } from './run-cli.js';

/** One read of a local Redis takes well under a millisecond; the rest is room for a loaded machine. */
const PUSH_BOUND_MS = 250;
const REFRESH_MS = 500;
const REFRESH_BOUND_MS = REFRESH_MS + 300;

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
    const deadline = Date.now() + 10_000;
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

  test('by pub/sub within the push latency, and by the periodic read within the refresh', async () => {
    let addedAt = 0;
    const added = await timesSeen(
      async () => {
        const run = await sluice(['config', 'deny', 'add', '203.0.113.0/24', '--reason', 'scraper', ...at()]);
        expect(run.code, run.stderr).toBe(0);
        addedAt = (JSON.parse(run.stdout) as { addedAt: number }).addedAt;
      },
      (deny) => deny.some((entry) => entry.match === '203.0.113.0/24'),
    );
    for (const { label, pushes } of instances) {
      const after = added.get(label)! - addedAt;
      expect(after, `${label} saw the entry ${after} ms after it was added`).toBeLessThanOrEqual(pushes ? PUSH_BOUND_MS : REFRESH_BOUND_MS);
    }
    for (const { limiter } of instances)
      expect(limiter.deny).toEqual([expect.objectContaining({ match: '203.0.113.0/24', reason: 'scraper' })]);

    let removedAt = 0;
    const removed = await timesSeen(
      async () => {
        const run = await sluice(['config', 'deny', 'remove', '203.0.113.0/24', ...at()]);
        expect(run.code, run.stderr).toBe(0);
        removedAt = Date.now(); // after the CLI exited: later than its write, so the bound is only tighter
      },
      (deny) => deny.length === 0,
    );
    for (const { label, pushes } of instances) {
      // Seen before the CLI's exit was noticed counts as 0: the removal was written before it exited.
      const after = Math.max(0, removed.get(label)! - removedAt);
      expect(after, `${label} saw the removal ${after} ms after the CLI exited`).toBeLessThanOrEqual(
        pushes ? PUSH_BOUND_MS : REFRESH_BOUND_MS,
      );
    }
    expect(warnings).toEqual([]);
  });
});
