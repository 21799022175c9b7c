/**
 * The bug this pins: an event-loop stall in the application switched limiting off for everyone. With Redis healthy,
 * a 400 ms synchronous handler let the deadline timer fire before the replies already waiting on the socket were
 * read: every decision in flight ended in STORE_TIMEOUT (fail open: all admitted), the breaker opened, and the next
 * client was let through unlimited for its cooldown. A deadline must measure the store, not the application: here a
 * real redis-server answers while the test stalls its own event loop.
 */
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { Redis } from 'ioredis';
import { createLimiter, tokenBucket, type Decision } from '@sluice/core';
import { redisStore } from '../src/index.js';
import { startRedis, type RedisServer } from '../../../../test/harness/redis.js';

let server: RedisServer;
let client: Redis;

beforeAll(async () => {
  server = await startRedis();
  client = new Redis({ host: server.host, port: server.port });
  await client.ping();
});

afterAll(async () => {
  client?.disconnect();
  await server?.stop();
});

/** What a 400 ms synchronous request handler does to everything else in the process. */
function stallEventLoop(ms: number): void {
  const until = Date.now() + ms;
  while (Date.now() < until) {
    // busy: no timer, no socket read, nothing else runs
  }
}

/** Lets the store's batcher seal its call and write it to the socket (microtasks only: no I/O is read). */
async function flushMicrotasks(): Promise<void> {
  for (let i = 0; i < 20; i++) await Promise.resolve();
}

describe('a stalled event loop is not a store failure', () => {
  for (const policy of ['allow', 'deny'] as const) {
    test(`regression: 20 decisions in flight through a 400 ms stall are answered by Redis (onStoreError '${policy}'), and the breaker stays closed`, async () => {
      const limiter = createLimiter({
        name: `stall-${policy}`,
        store: redisStore(client),
        rules: tokenBucket({ capacity: 5, refillRate: 1, interval: '1h' }),
        onStoreError: policy,
        timeout: 250,
      });
      await limiter.limit('warm-up'); // a running server: the script is loaded, the connection is up
      const pending = Array.from({ length: 20 }, () => limiter.limit('attacker'));
      await flushMicrotasks();
      stallEventLoop(400);
      const decisions: Decision[] = await Promise.all(pending);
      expect(decisions.filter((d) => d.degraded).map((d) => (d.error as { code?: string } | undefined)?.code)).toEqual([]);
      expect(decisions.filter((d) => d.allowed)).toHaveLength(5); // the limit held: 5 of 20, not 20 of 20
      expect(limiter.circuit).toBe('closed');
      // A different client right after is limited for real, not waved through by an open circuit.
      const next = await Promise.all(Array.from({ length: 8 }, () => limiter.limit('other')));
      expect(next.filter((d) => d.allowed)).toHaveLength(5);
      expect(next.every((d) => !d.degraded)).toBe(true);
    });
  }
});
