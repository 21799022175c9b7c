/**
 * An event-loop stall is not a failure of the tier (@sluice/tiered) over Redis, in strategy 'lease' and the default
 * 'deny-cache'. Two deadlines are in play, the tier's on its Redis calls and the limiter's on the tier; a real
 * synchronous busy loop of 400 ms while decisions are in flight must time out neither: no decision degraded, no
 * answer from the tier's local share, exactly the limit allowed, the breaker closed. And a Redis that really is slow
 * (stopped with SIGSTOP) on a healthy loop is answered at the tier's deadline.
 */
import { createLimiter, fixedWindow, type Decision } from '@sluice/core';
import { redisStore } from '@sluice/redis';
import { tieredStore } from '@sluice/tiered';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { startRedis, type RedisServer } from '../harness/redis.js';
import { degradedCodes, expectStoreAnswered, ioTurn, stallEventLoop, wallClock } from '../harness/event-loop-stall.js';

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

const RULES = fixedWindow({ limit: 5, window: '1h' });
/** The tier's default deadline on Redis calls, and the limiter's on the tier. */
const TIER_TIMEOUT = 150;
const TIMEOUT = 250;

describe.each(['deny-cache', 'lease'] as const)('a stalled event loop is not a failure of the tier over Redis (%s)', (strategy) => {
  for (const policy of ['allow', 'deny'] as const) {
    test(`20 decisions in flight through a 400 ms stall (onStoreError '${policy}'): none degraded, 5 of 20 allowed, breaker closed`, async () => {
      const tier = tieredStore({ remote: redisStore(client), instances: 1, strategy });
      const limiter = createLimiter({
        name: `tier-${strategy}-${policy}`,
        store: tier,
        rules: RULES,
        onStoreError: policy,
        timeout: TIMEOUT,
      });
      await limiter.limit('warm-up'); // the script is loaded, the connection is up
      await ioTurn(); // decisions made by a request handler, as they are
      const pending = Array.from({ length: 20 }, () => limiter.limit('attacker'));
      stallEventLoop(400);
      const decisions: Decision[] = await Promise.all(pending);
      await expectStoreAnswered(limiter, decisions, 5, { identity: 'other', limit: 5 });
      expect(tier.stats().degraded).toBe(0);
    });
  }
});

describe('a Redis that is slow on a healthy event loop still gets the tier its deadline', () => {
  test(`redis-server stopped (SIGSTOP) while 5 decisions wait: each is answered on the tier's local share within its ${TIER_TIMEOUT} ms deadline plus 100 ms by the caller's clock`, async () => {
    const tier = tieredStore({ remote: redisStore(client), instances: 1, strategy: 'deny-cache', circuitBreaker: false });
    const limiter = createLimiter({ name: 'tier-slow', store: tier, rules: RULES, timeout: TIMEOUT, circuitBreaker: false });
    await limiter.limit('warm-up');
    server.pause();
    try {
      const timed = await Promise.all(Array.from({ length: 5 }, (_, i) => wallClock(() => limiter.limit(`u${i}`))));
      expect(degradedCodes(timed.map((t) => t.value))).toEqual(Array(5).fill('STORE_TIMEOUT'));
      expect(tier.stats().degraded).toBe(5);
      for (const { elapsedMs } of timed) {
        expect(elapsedMs).toBeGreaterThanOrEqual(TIER_TIMEOUT);
        expect(elapsedMs).toBeLessThanOrEqual(TIER_TIMEOUT + 100);
      }
    } finally {
      server.resume();
    }
    await client.ping(); // the late replies are read and dropped
  });
});
