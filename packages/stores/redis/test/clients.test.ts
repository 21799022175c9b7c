/**
 * The store on each client it accepts (ioredis, node-redis 5 on RESP2 and RESP3, node-redis 4, Valkey GLIDE): which
 * clients it recognises and how it refuses the others, decisions issued together sharing one call, the fallbacks
 * on a server that lost the script and the function, and RESP3 replies. The offline behaviour of each client is in
 * client-offline.test.ts; the conformance and fault suites run on every client too.
 */
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { Redis } from 'ioredis';
import { createClient, createCluster, RESP_TYPES } from 'redis';
import { createClient as createClientV4, createCluster as createClusterV4 } from 'redis-v4';
import { createLimiter, fixedWindow, gcra, isSluiceError, tokenBucket } from '@sluice/core';
import { redisStore, type RedisClient } from '../src/index.js';
import { storeClient } from '../src/clients/index.js';
import { startCluster, startRedis, type RedisServer } from '../../../../test/harness/redis.js';
import { GlideClusterClient } from '@valkey/valkey-glide';
import { CLIENTS, type ClientKind, type OpenClient } from './clients.js';

let server: RedisServer;
/** An ioredis connection of the test's own, to read the server's command counts and keys. */
let admin: Redis;
const opened = new Map<string, OpenClient>();

beforeAll(async () => {
  server = await startRedis();
  admin = new Redis({ host: server.host, port: server.port });
  for (const kind of CLIENTS) opened.set(kind.name, await kind.open(server));
});

afterAll(async () => {
  for (const open of opened.values()) await open.close();
  admin?.disconnect();
  await server?.stop();
});

const clientOf = (kind: ClientKind): RedisClient => opened.get(kind.name)!.client;

/** Calls per command since the last CONFIG RESETSTAT (INFO commandstats). */
async function commandCalls(): Promise<Record<string, number>> {
  const info = await admin.info('commandstats');
  const calls: Record<string, number> = {};
  for (const match of info.matchAll(/cmdstat_([\w|]+):calls=(\d+)/g)) calls[match[1]!] = Number(match[2]);
  return calls;
}

function invalidOption(make: () => unknown): string {
  try {
    make();
  } catch (error) {
    expect(isSluiceError(error) && error.code).toBe('INVALID_OPTION');
    return (error as Error).message;
  }
  throw new Error('expected an INVALID_OPTION error');
}

describe('which clients redisStore accepts', () => {
  test('anything else is refused with INVALID_OPTION naming every accepted client', () => {
    for (const value of [{}, null, 'redis://localhost', { sendCommand: () => undefined }]) {
      const message = invalidOption(() => redisStore(value as never));
      expect(message).toMatch(/client must be an ioredis Redis or Cluster, a node-redis client or a Valkey GLIDE client/);
      expect(message).toContain('createClient()');
      expect(message).toContain('GlideClient.createClient');
    }
  });

  test('a node-redis Cluster (createCluster, v4 and v5) is refused by name, not taken for a client', () => {
    for (const cluster of [createCluster({ rootNodes: [] }), createClusterV4({ rootNodes: [] })]) {
      expect(invalidOption(() => redisStore(cluster as never))).toMatch(/a node-redis Cluster \(createCluster\) is not supported yet/);
    }
  });

  test('a GLIDE GlideClusterClient, connected to a real Cluster, is refused by name; its GlideClient is accepted', async () => {
    const cluster = await startCluster();
    const client = await GlideClusterClient.createClient({ addresses: [...cluster.nodes] });
    try {
      expect(invalidOption(() => redisStore(client as never))).toMatch(/a Valkey GLIDE GlideClusterClient is not supported yet/);
      expect(() => redisStore(clientOf(CLIENTS.find((kind) => kind.library === 'valkey-glide')!))).not.toThrow();
    } finally {
      client.close();
      await cluster.stop();
    }
  }, 60_000);

  test('a node-redis client that was never connected fails its decisions at once (STORE_ERROR), never hangs or queues them', async () => {
    for (const client of [createClient({ socket: { port: server.port } }), createClientV4({ socket: { port: server.port } })]) {
      const limiter = createLimiter({ store: redisStore(client), rules: fixedWindow({ limit: 5, window: '1m' }), onStoreError: 'deny' });
      const decision = await limiter.limit('never-connected');
      expect(decision).toMatchObject({ allowed: false, degraded: true });
      // The client's own error at once (ClientClosedError), not the limiter's deadline (STORE_TIMEOUT).
      expect(isSluiceError(decision.error) && decision.error.code).toBe('STORE_ERROR');
    }
    expect(await admin.keys('*never-connected*')).toEqual([]);
  });
});

describe.each(CLIENTS)('redisStore on $name', (kind) => {
  for (const [how, functions, call] of [
    ['a Redis Function (FCALL)', true, 'fcall'],
    ['a script (EVALSHA)', false, 'evalsha'],
  ] as const) {
    test(`decisions issued in one turn share one call, as ${how}, each answered in issue order`, async () => {
      const rules = [
        tokenBucket({ capacity: 5, refillRate: 1 }),
        fixedWindow({ limit: 3, window: '1m' }),
        gcra({ limit: 10, period: '1s' }),
      ];
      const limiter = createLimiter({
        store: redisStore(clientOf(kind), { functions, clock: 'client' }),
        rules,
        name: `batch-${kind.id}-${call}`,
        clock: () => 1_700_000_000_000,
      });
      await limiter.limit('warm'); // loads the script or function if needed
      await admin.config('RESETSTAT');
      const decisions = await Promise.all(Array.from({ length: 8 }, () => limiter.limit('one')));
      const calls = await commandCalls();
      expect(calls[call]).toBe(1);
      expect((calls.eval ?? 0) + (calls['function|load'] ?? 0)).toBe(0);
      expect(calls.mget).toBe(1);
      expect(decisions.map((d) => d.allowed)).toEqual([true, true, true, false, false, false, false, false]);
      expect(decisions.map((d) => d.remaining)).toEqual([2, 1, 0, 0, 0, 0, 0, 0]);
    });
  }

  test('a server that lost its script and function (SCRIPT FLUSH, FUNCTION FLUSH): FUNCTION LOAD, or EVAL on NOSCRIPT, once', async () => {
    for (const functions of [true, false]) {
      const limiter = createLimiter({
        store: redisStore(clientOf(kind), { functions }),
        rules: fixedWindow({ limit: 2, window: '1m' }),
        name: `flushed-${kind.id}-${functions}`,
      });
      await admin.script('FLUSH');
      await admin.function('FLUSH');
      await admin.config('RESETSTAT');
      const decisions = await Promise.all([limiter.limit('a'), limiter.limit('a'), limiter.limit('a')]);
      expect(decisions.map((d) => [d.allowed, d.degraded])).toEqual([
        [true, false],
        [true, false],
        [false, false],
      ]);
      const calls = await commandCalls();
      if (functions)
        expect([calls['function|load'], calls.fcall]).toEqual([1, 2]); // missing, loaded, run again
      else expect([calls.evalsha, calls.eval]).toEqual([1, 1]); // NOSCRIPT, then the script's text
    }
  });

  test('store clock, reset and leases: Redis TIME in epoch ms, state deleted, a lease held and released', async () => {
    const store = redisStore(clientOf(kind));
    const limiter = createLimiter({ store, rules: fixedWindow({ limit: 1, window: '1m' }), name: `time-${kind.id}` });
    const before = Date.now();
    const first = await limiter.limit('t');
    expect(first.now).toBeGreaterThanOrEqual(before - 5);
    expect(first.now).toBeLessThanOrEqual(Date.now() + 5);
    expect((await limiter.limit('t')).allowed).toBe(false);
    await limiter.reset('t');
    expect((await limiter.limit('t')).allowed).toBe(true);

    const key = `lease-{${kind.id}}`;
    const acquired = await store.lease({ op: 'acquire', key, id: 'holder-1', limit: 1, ttlMs: 10_000, now: 0 });
    expect(acquired).toMatchObject({ ok: true, held: 1 });
    expect(typeof acquired.now).toBe('number');
    expect(await store.lease({ op: 'acquire', key, id: 'holder-2', limit: 1, ttlMs: 10_000, now: 0 })).toMatchObject({
      ok: false,
      held: 1,
    });
    expect(await store.lease({ op: 'release', key, id: 'holder-1', limit: 1, ttlMs: 10_000, now: 0 })).toMatchObject({ ok: true, held: 0 });
  });
});

describe('RESP3 (node-redis 5)', () => {
  test('replies keep their RESP2 shape whatever type mapping the application gave its client', async () => {
    const open = async (options: object) => {
      const client = createClient({ socket: { host: server.host, port: server.port }, RESP: 3, ...options });
      client.on('error', () => {});
      return client.connect();
    };
    const plain = await open({});
    // The application reads numbers as strings and strings as Buffers; the store's own replies stay plain.
    const mapped = await open({ commandOptions: { typeMapping: { [RESP_TYPES.NUMBER]: String, [RESP_TYPES.BLOB_STRING]: Buffer } } });
    try {
      expect(await mapped.sendCommand(['EVAL', 'return {1, "x"}', '0'])).toEqual(['1', Buffer.from('x')]);
      expect(await plain.sendCommand(['EVAL', 'return {1, "x"}', '0'])).toEqual([1, 'x']);
      // The contract's replies (clients/contract.ts) are plain on both: integers as numbers, strings as strings.
      await plain.sendCommand(['SET', 'resp3-text', 'text']);
      for (const client of [plain, mapped]) {
        const contract = storeClient(client, 'test');
        expect(await contract.send('EVAL', ['return {1, "x", false}', 0])).toEqual([1, 'x', null]);
        expect(await contract.send('GET', ['resp3-text'])).toBe('text');
      }
      for (const [client, name] of [
        [plain, 'plain'],
        [mapped, 'mapped'],
      ] as const) {
        const store = redisStore(client);
        const limiter = createLimiter({ store, rules: tokenBucket({ capacity: 3, refillRate: 1 }), name: `resp3-${name}` });
        const decisions = await Promise.all([limiter.limit('r'), limiter.limit('r'), limiter.limit('r'), limiter.limit('r')]);
        expect(decisions.map((d) => [d.allowed, d.remaining, d.degraded])).toEqual([
          [true, 2, false],
          [true, 1, false],
          [true, 0, false],
          [false, 0, false],
        ]);
        expect(Number.isSafeInteger(decisions[0]!.now) && Number.isSafeInteger(decisions[3]!.resetAt)).toBe(true);
        const lease = await store.lease({ op: 'acquire', key: `resp3-lease-${name}`, id: 'h', limit: 2, ttlMs: 1000, now: 0 });
        expect(lease).toMatchObject({ ok: true, held: 1 });
      }
    } finally {
      await plain.disconnect();
      await mapped.disconnect();
    }
  });
});
