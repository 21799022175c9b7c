/**
 * @upstash/ratelimit runs unchanged against the fixture: its scripts carry `#!lua flags=allow-key-locking`,
 * which plain Redis refuses, and it relies on EVALSHA with a NOSCRIPT fallback to EVAL. This is what makes the
 * fixture a fair ground for the sluice-vs-@upstash/ratelimit benchmark.
 */
import { Ratelimit } from '@upstash/ratelimit';
import { Redis } from '@upstash/redis';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { startUpstashFixture, type UpstashFixture } from '../harness/upstash-fixture.js';
import { startRedis, type RedisServer } from '../harness/redis.js';

let redisServer: RedisServer;
let fixture: UpstashFixture;
let redis: Redis;

beforeAll(async () => {
  redisServer = await startRedis();
  fixture = await startUpstashFixture({ redisPort: redisServer.port });
  redis = new Redis({ url: fixture.url, token: fixture.token, enableTelemetry: false });
});

afterAll(async () => {
  await fixture?.close();
  await redisServer?.stop();
});

beforeEach(() => fixture.resetStats());

const algorithms = {
  fixedWindow: Ratelimit.fixedWindow(3, '10 s'),
  slidingWindow: Ratelimit.slidingWindow(3, '10 s'),
  tokenBucket: Ratelimit.tokenBucket(1, '10 s', 3),
};

describe.each(Object.entries(algorithms))('@upstash/ratelimit %s through the fixture', (name, limiter) => {
  it('allows the limit, then denies, and the scripts ran on Redis', async () => {
    const ratelimit = new Ratelimit({ redis, limiter, prefix: `compat-${name}`, ephemeralCache: false });
    // @upstash/ratelimit computes its 10 s windows from this process's clock: five calls that straddle a window's
    // end would meet a fresh window (or, sliding, a previous window weighted below its count) and be allowed again.
    // Start far from an end; the five calls take milliseconds.
    const intoWindow = Date.now() % 10_000;
    if (intoWindow > 6_000) await new Promise((resolve) => setTimeout(resolve, 10_000 - intoWindow + 50));
    const outcomes: boolean[] = [];
    for (let i = 0; i < 5; i++) outcomes.push((await ratelimit.limit('user-1')).success);
    expect(outcomes).toEqual([true, true, true, false, false]);
    // Another identity is untouched: the state really lives per key in Redis.
    expect((await ratelimit.limit('user-2')).success).toBe(true);
    // Every decision reached Redis through EVALSHA (no cache answered); the first one met NOSCRIPT and fell
    // back to EVAL with the flagged script, which the fixture accepted.
    expect(fixture.stats.byCommand.evalsha).toBe(6);
    expect(fixture.stats.byCommand.eval).toBe(1);
  });
});
