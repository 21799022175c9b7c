/**
 * Behaviours of the real @upstash/redis client that @sluice/upstash's design and README rely on, pinned here
 * so an upgrade of the client that changes them fails loudly.
 */
import { isNoScript } from '@sluice/redis-script';
import { Redis, type RedisConfigNodejs } from '@upstash/redis';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { startUpstashFixture, type UpstashFixture } from '../../../../test/harness/upstash-fixture.js';
import { startRedis, type RedisServer } from '../../../../test/harness/redis.js';

let redisServer: RedisServer;
let fixture: UpstashFixture;

beforeAll(async () => {
  redisServer = await startRedis();
  fixture = await startUpstashFixture({ redisPort: redisServer.port });
});

afterAll(async () => {
  await fixture?.close();
  await redisServer?.stop();
});

beforeEach(() => {
  fixture.setFault(undefined);
  fixture.resetStats();
});

const client = (options: Partial<RedisConfigNodejs> = {}) =>
  new Redis({ url: fixture.url, token: fixture.token, enableTelemetry: false, enableAutoPipelining: false, ...options });

describe('retries on network errors', () => {
  it('retry: { retries: 0 } sends once; retry: false still sends twice', async () => {
    fixture.setFault('reset');
    await expect(client({ retry: { retries: 0 } }).ping()).rejects.toThrow();
    expect(fixture.stats.requests).toBe(1);
    fixture.resetStats();
    await expect(client({ retry: false }).ping()).rejects.toThrow();
    expect(fixture.stats.requests).toBe(2);
  });

  it('an HTTP error answer (500) is never resent', async () => {
    fixture.setFault('status-500');
    await expect(client().ping()).rejects.toThrow();
    expect(fixture.stats.requests).toBe(1);
  });
});

describe('errors carry the Redis error code where the store looks for it', () => {
  it("NOSCRIPT leads the message, one command per request and auto-pipelined; the stores' shared check sees both", async () => {
    const sha = 'f'.repeat(40);
    const single: unknown = await client()
      .evalsha(sha, [], [])
      .catch((e: unknown) => e);
    const pipelined: unknown = await client({ enableAutoPipelining: true })
      .evalsha(sha, [], [])
      .catch((e: unknown) => e);
    expect((single as Error).message).toMatch(/^NOSCRIPT .*, command was: /);
    expect((pipelined as Error).message).toMatch(/^Command failed: NOSCRIPT /);
    expect([isNoScript(single), isNoScript(pipelined)]).toEqual([true, true]);
    // A script's own error is no miss, whatever it says.
    const raised: unknown = await client()
      .eval("error('NOSCRIPT in a message')", [], [])
      .catch((e: unknown) => e);
    expect((raised as Error).message).toMatch(/NOSCRIPT in a message/);
    expect(isNoScript(raised)).toBe(false);
  });
});

describe('auto-pipelining', () => {
  it('is on by default and carries concurrent commands in one /pipeline request', async () => {
    const redis = new Redis({ url: fixture.url, token: fixture.token, enableTelemetry: false });
    await Promise.all([redis.incr('auto:a'), redis.incr('auto:b'), redis.incr('auto:c')]);
    expect(fixture.stats).toMatchObject({ requests: 1, pipeline: 1, redisCommands: 3 });
  });
});
