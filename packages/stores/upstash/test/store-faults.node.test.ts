/**
 * Real faults behind the REST endpoint: the redis-server under the Upstash fixture is paused (SIGSTOP), killed
 * and restarted while @sluice/upstash decides through the real @upstash/redis client. Every decision returns
 * within the deadline plus a small margin, degraded and explained; after the restart the store recovers with
 * nothing done by the app.
 */
import { createLimiter, fixedWindow, isSluiceError, type Decision } from '@sluice/core';
import { upstashStore } from '../src/index.js';
import { Redis } from '@upstash/redis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startRedis, type RedisServer } from '../../../../test/harness/redis.js';
import { startUpstashFixture, type UpstashFixture } from '../../../../test/harness/upstash-fixture.js';

let redisServer: RedisServer;
let fixture: UpstashFixture;

beforeAll(async () => {
  redisServer = await startRedis();
  fixture = await startUpstashFixture({ redisPort: redisServer.port });
});

afterAll(async () => {
  redisServer?.resume();
  await fixture?.close();
  await redisServer?.stop();
});

const TIMEOUT_MS = 200;
const MARGIN_MS = 250; // the machine running the suites is shared; a late timer is not a late deadline

/** A limiter with a short deadline, over a client and store already warm (connection open, script cached). */
async function limiter() {
  // retries: 0 so that a dropped connection is not resent by the client after the deadline answered.
  const redis = new Redis({ url: fixture.url, token: fixture.token, enableTelemetry: false, retry: { retries: 0 } });
  const store = upstashStore(redis);
  const rules = fixedWindow({ limit: 100, window: '1m' });
  const patient = createLimiter({ store, rules, timeout: 5_000, circuitBreaker: false });
  expect((await patient.limit('warmup')).degraded).toBe(false);
  return { limit: createLimiter({ store, rules, timeout: TIMEOUT_MS, circuitBreaker: false }), patient };
}

async function timed(run: () => Promise<Decision>): Promise<{ decision: Decision; ms: number }> {
  const started = performance.now();
  const decision = await run();
  return { decision, ms: performance.now() - started };
}

describe('redis-server behind the fixture', () => {
  it('paused (SIGSTOP): decisions hit the deadline, degraded STORE_TIMEOUT; resumed: back to normal', async () => {
    const { limit } = await limiter();
    expect((await limit.limit('paused')).degraded).toBe(false);
    redisServer.pause();
    try {
      const results = await Promise.all(Array.from({ length: 5 }, () => timed(() => limit.limit('paused'))));
      for (const { decision, ms } of results) {
        expect(decision).toMatchObject({ allowed: true, degraded: true, reason: 'store_unavailable' });
        expect(isSluiceError(decision.error) && decision.error.code).toBe('STORE_TIMEOUT');
        expect(ms).toBeLessThan(TIMEOUT_MS + MARGIN_MS);
      }
    } finally {
      redisServer.resume();
    }
    const after = await limit.limit('paused');
    expect(after.degraded).toBe(false);
  });

  it('killed: decisions come back at once, degraded STORE_ERROR; restarted: the store recovers by itself', async () => {
    const { limit, patient } = await limiter();
    expect((await limit.limit('killed')).degraded).toBe(false);
    await redisServer.kill();
    const { decision, ms } = await timed(() => limit.limit('killed'));
    expect(decision).toMatchObject({ allowed: true, degraded: true, reason: 'store_unavailable' });
    expect(isSluiceError(decision.error) && decision.error.code).toBe('STORE_ERROR');
    expect(ms).toBeLessThan(TIMEOUT_MS + MARGIN_MS);
    await redisServer.restart();
    // A fresh redis-server has an empty script cache: the store's one NOSCRIPT fallback loads it again. Same
    // store and keys; only the deadline is generous, since reconnecting on a loaded machine takes a moment.
    const recovered = await patient.limit('killed');
    expect(recovered).toMatchObject({ allowed: true, degraded: false, remaining: 99 });
  });
});
