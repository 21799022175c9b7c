/**
 * A decision made while the client is disconnected, on each client: the failure policy answers it, and it must
 * never reach Redis later. ioredis and node-redis queue commands offline by default (the control command shows
 * that each really does), so the store holds its own and drops them after `offlineWait`; Valkey GLIDE has no such
 * queue but holds a request up to its own `requestTimeout`, which decides whether a late write can happen.
 */
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { Redis } from 'ioredis';
import { createClient } from 'redis';
import { createClient as createClientV4 } from 'redis-v4';
import { createLimiter, fixedWindow, isSluiceError, type Decision } from '@sluice/core';
import { redisStore } from '../src/index.js';
import { storeClient } from '../src/clients/index.js';
import { startRedis, type RedisServer } from '../../../../test/harness/redis.js';
import { CLIENTS, type ClientKind, type OpenClient } from './clients.js';

let server: RedisServer;
/** The test's own connection, to read what reached the server (ioredis reconnects it after each restart). */
let admin: Redis;
const opened: OpenClient[] = [];

beforeAll(async () => {
  server = await startRedis();
  admin = new Redis({ host: server.host, port: server.port });
  admin.on('error', () => {});
});

afterAll(async () => {
  for (const open of opened) await open.close();
  admin?.disconnect();
  await server?.stop();
});

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

async function until(condition: () => boolean | Promise<boolean>, what: string, limitMs = 10_000): Promise<void> {
  const start = performance.now();
  while (!(await condition())) {
    if (performance.now() - start > limitMs) throw new Error(`${what}: not within ${limitMs} ms`);
    await sleep(10);
  }
}

async function open(kind: ClientKind, options?: { requestTimeout?: number }): Promise<OpenClient> {
  const client = await kind.open(server, options);
  opened.push(client);
  return client;
}

function limiterOn(client: OpenClient, name: string, options: { timeout?: number; offlineWait?: number } = {}) {
  return createLimiter({
    store: redisStore(client.client, { clock: 'client', offlineWait: options.offlineWait }),
    rules: fixedWindow({ limit: 5, window: '1h' }),
    name,
    onStoreError: 'deny',
    timeout: options.timeout,
  });
}

const codeOf = (decision: Decision) => (isSluiceError(decision.error) ? decision.error.code : undefined);

/** Whether any key of the identity reached the server (limiter names here never contain an identity). */
const counted = async (identity: string) => (await admin.keys(`*${identity}*`)).length > 0;

const QUEUEING = CLIENTS.filter((kind) => kind.library !== 'valkey-glide');
const GLIDE = CLIENTS.find((kind) => kind.library === 'valkey-glide')!;

describe.each(QUEUEING)('$name, whose offline queue is on by default', { timeout: 30_000 }, (kind) => {
  test('a decision made while Redis is down is answered by the policy and never sent, though the client sends its queue later', async () => {
    const client = await open(kind);
    const state = storeClient(client.client, 'test');
    const limiter = limiterOn(client, `offline-${kind.id}`);
    expect((await limiter.limit('warm')).degraded).toBe(false);

    await server.kill();
    await until(() => state.state() !== 'ready', 'the client notices the server is gone');
    const identity = `gone-${kind.id}`;
    const decision = await limiter.limit(identity);
    expect(decision).toMatchObject({ allowed: false, degraded: true, reason: 'store_unavailable' });
    expect(codeOf(decision)).toMatch(/^STORE_(ERROR|TIMEOUT)$/);
    // The control: the same client, a command of the application's own, sent while it is down.
    const control = client.command(['SET', `control-${kind.id}`, 'sent later']).then(
      () => 'written',
      (error: unknown) => `failed: ${String(error)}`,
    );

    await sleep(300); // well past the decision's answer and its offlineWait
    await server.restart();
    expect(await control).toBe('written'); // the client's queue reached the new server...
    expect(await admin.get(`control-${kind.id}`)).toBe('sent later');
    await until(() => state.state() === 'ready', 'the client is back');
    expect((await limiter.limit('after')).degraded).toBe(false);
    expect(await counted(identity)).toBe(false); // ...the decision did not
  });

  test('a decision made while Redis is down is held by the store (not the client) and sent when it is back within offlineWait', async () => {
    const client = await open(kind);
    const state = storeClient(client.client, 'test');
    const limiter = limiterOn(client, `hold-${kind.id}`, { timeout: 8000, offlineWait: 7000 });
    expect((await limiter.limit('warm')).degraded).toBe(false);

    await server.kill();
    await until(() => state.state() !== 'ready', 'the client notices the server is gone');
    const identity = `held-${kind.id}`;
    const pending = limiter.limit(identity);
    await sleep(200);
    await server.restart();
    const decision = await pending;
    expect(decision).toMatchObject({ allowed: true, degraded: false, remaining: 4 });
    expect(await counted(identity)).toBe(true);
  });
});

describe('node-redis with disableOfflineQueue', { timeout: 30_000 }, () => {
  const options = () => ({ socket: { host: server.host, port: server.port }, disableOfflineQueue: true });
  test.each([
    ['node-redis 5', () => createClient(options())],
    ['node-redis 4', () => createClientV4(options()) as unknown as ReturnType<typeof createClient>],
  ] as const)('%s: nothing is held, a decision made while Redis is down fails at once and never counts', async (_, create) => {
    const client = create();
    client.on('error', () => {});
    await client.connect();
    try {
      const limiter = createLimiter({
        store: redisStore(client, { offlineWait: 5000 }),
        rules: fixedWindow({ limit: 5, window: '1h' }),
        onStoreError: 'deny',
        timeout: 2000,
      });
      expect((await limiter.limit('warm')).degraded).toBe(false);
      await server.kill();
      await until(() => !client.isReady, 'the client notices the server is gone');
      const start = performance.now();
      const decision = await limiter.limit('no-queue');
      // Well before the limiter's 2 s deadline and the 5 s offlineWait: the client refused it (ClientOfflineError).
      expect(performance.now() - start).toBeLessThan(1000);
      expect(codeOf(decision)).toBe('STORE_ERROR');
      await server.restart();
      await until(() => client.isReady, 'the client is back');
      expect((await limiter.limit('after')).degraded).toBe(false);
      expect(await counted('no-queue')).toBe(false);
    } finally {
      await client.disconnect().catch(() => undefined);
    }
  });
});

describe('Valkey GLIDE, which has no offline queue but its own requestTimeout', { timeout: 30_000 }, () => {
  /** Kills the server, decides once, restarts it `downMs` later, and waits until the client answers again. */
  async function decideWhileDown(client: OpenClient, identity: string, downMs: number): Promise<Decision> {
    const limiter = limiterOn(client, `limiter-of-${identity.length}-${downMs}`);
    expect((await limiter.limit('warm')).degraded).toBe(false);
    await server.kill();
    // Past the moment GLIDE sees the connection drop: a request written before that fails at once with the socket.
    await sleep(300);
    const decision = await limiter.limit(identity);
    await sleep(downMs);
    await server.restart();
    await until(
      () =>
        client.command(['PING']).then(
          () => true,
          () => false,
        ),
      'GLIDE is back',
    );
    await sleep(500); // a request GLIDE still held would be written by now
    return decision;
  }

  test('with its default requestTimeout (250 ms, the limiters’ default timeout too) an answered decision is never sent later', async () => {
    const client = await open(GLIDE);
    const decision = await decideWhileDown(client, 'glide-default', 400);
    expect(decision).toMatchObject({ allowed: false, degraded: true, reason: 'store_unavailable' });
    expect(await counted('glide-default')).toBe(false);
  });

  test('with a requestTimeout longer than the limiter’s timeout, the answered decision can still count: keep it at most the timeout', async () => {
    const client = await open(GLIDE, { requestTimeout: 5000 });
    const decision = await decideWhileDown(client, 'glide-long', 400);
    // The limiter's deadline answered (250 ms), but GLIDE kept the request and wrote it once the server was back.
    expect(decision).toMatchObject({ allowed: false, degraded: true, reason: 'store_unavailable' });
    expect(codeOf(decision)).toBe('STORE_TIMEOUT');
    expect(await counted('glide-long')).toBe(true);
  });
});
