/**
 * Event-loop stalls the Redis store's decisions must come through, beyond a stall after their calls were written
 * (event-loop-stall.test.ts): a stall that starts before the batcher has written the calls to the socket (the
 * request goes out only when the stall ends, so the reply comes after it). No decision may be degraded, the limit must hold exactly, the breaker stay closed. And
 * the other side: a redis-server that really is slow (stopped with SIGSTOP) on a healthy loop is answered by the
 * failure policy at its deadline.
 */
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { Redis } from 'ioredis';
import { createLimiter, tokenBucket, type Decision } from '@sluice/core';
import { redisStore } from '../src/index.js';
import { startRedis, type RedisServer } from '../../../../test/harness/redis.js';
import { degradedCodes, expectStoreAnswered, ioTurn, stallEventLoop, wallClock } from '../../../../test/harness/event-loop-stall.js';

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

const RULES = tokenBucket({ capacity: 5, refillRate: 1, interval: '1h' });
const TIMEOUT = 250;

describe('a stalled event loop is not a failure of the Redis store', () => {
  for (const policy of ['allow', 'deny'] as const) {
    test(`20 decisions through a 400 ms stall that starts before their calls are written (onStoreError '${policy}'): none degraded, 5 of 20 allowed, breaker closed`, async () => {
      const limiter = createLimiter({
        name: `unwritten-${policy}`,
        store: redisStore(client),
        rules: RULES,
        onStoreError: policy,
        timeout: TIMEOUT,
      });
      await limiter.limit('warm-up'); // a running server: the script is loaded, the connection is up
      await ioTurn(); // decisions made by a request handler, as they are
      const pending = Array.from({ length: 20 }, () => limiter.limit('attacker'));
      stallEventLoop(400); // the batcher has not sealed its call yet: nothing is on the socket until this ends
      const decisions: Decision[] = await Promise.all(pending);
      await expectStoreAnswered(limiter, decisions, 5, { identity: 'other', limit: 5 });
    });
  }
});

describe('a Redis that is slow on a healthy event loop still gets its deadline', () => {
  test(`redis-server stopped (SIGSTOP) while 5 decisions wait: each is answered by the policy (STORE_TIMEOUT) within the ${TIMEOUT} ms deadline plus 100 ms by the caller's clock`, async () => {
    const limiter = createLimiter({ name: 'slow', store: redisStore(client), rules: RULES, timeout: TIMEOUT, circuitBreaker: false });
    await limiter.limit('warm-up');
    server.pause();
    try {
      const timed = await Promise.all(Array.from({ length: 5 }, () => wallClock(() => limiter.limit('u'))));
      expect(degradedCodes(timed.map((t) => t.value))).toEqual(Array(5).fill('STORE_TIMEOUT'));
      for (const { elapsedMs } of timed) {
        expect(elapsedMs).toBeGreaterThanOrEqual(TIMEOUT);
        expect(elapsedMs).toBeLessThanOrEqual(TIMEOUT + 100);
      }
    } finally {
      server.resume();
    }
    await client.ping(); // the late replies are read and dropped
  });
});
