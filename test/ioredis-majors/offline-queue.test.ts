/**
 * The bug this pins: with the README's default ioredis client and Redis down at startup, the store's commands waited
 * in ioredis's offline queue and ran on reconnect, long after the limiter had answered them by its failure policy:
 * the first decision after recovery already showed r=0. A decision that timed out must never count later. A real
 * redis-server is stopped, decisions are made and answered degraded, the server comes back on the same port, and the
 * budget must be untouched. Runs on ioredis 5 and 6.
 */
import { afterEach, describe, expect, test } from 'vitest';
import { createLimiter, fixedWindow, isSluiceError, type Store } from '@sluice/core';
import { startRedis, type RedisServer } from '../harness/redis.js';
import { MAJORS, type AnyRedis } from './ioredis-majors.js';

const LIMIT = 7;
const rules = fixedWindow({ limit: LIMIT, window: '1h' });

const cleanup: Array<() => Promise<void> | void> = [];
afterEach(async () => {
  for (const step of cleanup.splice(0).reverse()) await step();
});

/** Resolves once the client is ready and every command queued before this call has run (PING queues behind them). */
async function settled(client: AnyRedis): Promise<void> {
  if (client.status !== 'ready') await new Promise<void>((resolve) => client.once('ready', () => resolve()));
  await client.ping();
}

async function downServer(): Promise<RedisServer> {
  const server = await startRedis();
  cleanup.push(() => server.stop());
  await server.kill(); // the port is closed: a client made now finds Redis down at startup
  return server;
}

describe.each(MAJORS)('a decision that timed out while Redis was down never counts later (ioredis $major)', ({ connect, redisStore }) => {
  test('Redis down at startup: degraded decisions, then a full budget after the server comes back on the same port', async () => {
    const server = await downServer();
    const client = connect(server.port); // ioredis defaults: offline queue on, endless reconnects
    cleanup.push(() => client.disconnect());
    // Every store call is kept, so the test can wait until each has finished, however late (on the old code a
    // queued call ran on reconnect, and through FUNCTION LOAD and a retry on the fresh server: several round trips).
    const store = redisStore(client);
    const calls: Array<Promise<unknown>> = [];
    const tracked: Store = {
      capabilities: store.capabilities,
      limit: (request) => {
        const call = store.limit(request);
        calls.push(call.catch(() => undefined));
        return call;
      },
      reset: (key, ids) => store.reset(key, ids),
    };
    // The limiter's default deadline (250 ms): the store's default offlineWait (200 ms) stays below it.
    const limiter = createLimiter({ store: tracked, rules, name: 'offline', circuitBreaker: false });

    for (let i = 0; i < 6; i++) {
      const decision = await limiter.limit('user');
      expect(decision.degraded).toBe(true);
      expect(decision.reason).toBe('store_unavailable');
    }

    await server.restart();
    await settled(client);
    await Promise.all(calls);
    expect(await limiter.peek('user')).toMatchObject({ allowed: true, remaining: LIMIT, degraded: false });
    expect(await limiter.limit('user')).toMatchObject({ allowed: true, remaining: LIMIT - 1, degraded: false });
    expect(await client.keys('*')).toEqual(['sluice:offline:{user}:fw:3600000']);
  });

  test('a decision issued while the client connects is held (not degraded) and counts once', async () => {
    const server = await startRedis();
    cleanup.push(() => server.stop());
    const client = connect(server.port);
    cleanup.push(() => client.disconnect());
    expect(client.status).not.toBe('ready');
    const limiter = createLimiter({ store: redisStore(client), rules, name: 'starting' });
    expect(await limiter.limit('user')).toMatchObject({ allowed: true, remaining: LIMIT - 1, degraded: false });
  });

  test('a lazyConnect client is connected by the store, as its first command would', async () => {
    const server = await startRedis();
    cleanup.push(() => server.stop());
    const client = connect(server.port, { lazyConnect: true });
    cleanup.push(() => client.disconnect());
    expect(client.status).toBe('wait');
    const limiter = createLimiter({ store: redisStore(client), rules, name: 'lazy' });
    expect(await limiter.limit('user')).toMatchObject({ allowed: true, remaining: LIMIT - 1, degraded: false });
  });

  test('offlineWait: 0 refuses at once while not ready, with a STORE_ERROR that says nothing was sent', async () => {
    const server = await downServer();
    const client = connect(server.port);
    cleanup.push(() => client.disconnect());
    const store = redisStore(client, { offlineWait: 0 });
    const error: unknown = await store
      .limit({ key: 'k:{u}', rules: [rules], cost: 1, operation: 'consume', now: 0 })
      .catch((e: unknown) => e);
    expect(isSluiceError(error) && error.code).toBe('STORE_ERROR');
    expect(String(error)).toMatch(/offlineWait \(0 ms\); the decision was not sent/);
    await server.restart();
    await settled(client);
    expect(await client.keys('*')).toEqual([]);
  });

  test("enableOfflineQueue: false on the client: nothing is held, the decision fails at once with ioredis's error", async () => {
    const server = await downServer();
    const client = connect(server.port, { enableOfflineQueue: false });
    cleanup.push(() => client.disconnect());
    const error: unknown = await redisStore(client)
      .limit({ key: 'k:{u}', rules: [rules], cost: 1, operation: 'consume', now: 0 })
      .catch((e: unknown) => e);
    expect(String(error)).toMatch(/enableOfflineQueue options is false/);
  });
});

test("redisStore: offlineWait takes a duration: '150ms' and 150 hold a decision alike, then fail it unsent", async () => {
  const server = await downServer();
  const [{ connect, redisStore }] = MAJORS;
  const client = connect(server.port);
  cleanup.push(() => client.disconnect());
  for (const offlineWait of ['150ms', 150] as const) {
    const store = redisStore(client, { offlineWait });
    const start = performance.now();
    const error: unknown = await store
      .limit({ key: 'k:{u}', rules: [rules], cost: 1, operation: 'consume', now: 0 })
      .catch((e: unknown) => e);
    const held = performance.now() - start;
    expect(String(error)).toMatch(/within offlineWait \(150 ms\); the decision was not sent/);
    expect(held).toBeGreaterThanOrEqual(145);
    expect(held).toBeLessThan(1_000);
  }
});

test('redisStore: offlineWait is validated, naming the field; the former name offlineWaitMs is answered with the current one', async () => {
  const server = await downServer();
  const [{ connect, redisStore }] = MAJORS;
  const client = connect(server.port);
  cleanup.push(() => client.disconnect());
  for (const bad of [-1, 1.5, Number.NaN, '-200', '1 sec', 2 ** 31]) {
    expect(() => redisStore(client, { offlineWait: bad as never })).toThrow(
      /^\[sluice\] redisStore: offlineWait must be a duration from 0 to 2147483647 ms \(a whole number of ms or a string like '250ms'/,
    );
  }
  expect(() => redisStore(client, { offlineWaitMs: 200 } as never)).toThrow(
    expect.objectContaining({
      code: 'UNKNOWN_OPTION',
      message: expect.stringMatching(/redisStore: unknown option "offlineWaitMs"; accepted options are/),
    }),
  );
});
