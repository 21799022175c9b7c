import { afterAll, beforeAll } from 'vitest';
import { Redis } from 'ioredis';
import { describeStoreConformance } from '@sluice/conformance';
import { redisStore, type RedisStore } from '../src/index.js';
import { startRedis, type RedisServer } from '../../../../test/harness/redis.js';
import { OTHER_CLIENTS, type OpenClient } from './clients.js';

let server: RedisServer;
let client: Redis;
/** The other clients (node-redis, GLIDE), by name, each on the same server. */
const others = new Map<string, OpenClient>();

beforeAll(async () => {
  server = await startRedis();
  client = new Redis({ host: server.host, port: server.port, enableAutoPipelining: true });
  for (const kind of OTHER_CLIENTS) others.set(kind.name, await kind.open(server));
});

afterAll(async () => {
  client?.disconnect();
  for (const other of others.values()) await other.close();
  await server?.stop();
});

/** The keys under a test's prefix on the test's own server (KEYS leaves out expired keys). */
const keysUnder = ({ prefix }: { prefix: string }): Promise<string[]> => client.keys(`${prefix}:*`);

// Client clock: the suite drives a fake clock through every time-driven vector. Redis expires keys by its own
// clock (PX), so the runs say keyExpiry: 'store': their key checks hold the keys past the fake resetAt, and expiry
// itself is checked by the store-clock run below, where both clocks are the same.
describeStoreConformance<RedisStore>({
  name: 'redis',
  createStore: () => redisStore(client, { clock: 'client' }),
  clock: 'client',
  capabilities: { synchronous: false, operations: ['take', 'reserve'], leases: true },
  storeScope: 'suite',
  inspectKeys: keysUnder,
  keyExpiry: 'store',
  requireAll: true,
});

// The script run by EVALSHA (as on a Cluster, or where Functions are unavailable) rather than as a Function.
describeStoreConformance<RedisStore>({
  name: 'redis (EVALSHA)',
  createStore: () => redisStore(client, { clock: 'client', functions: false }),
  clock: 'client',
  capabilities: { synchronous: false, operations: ['take', 'reserve'], leases: true },
  storeScope: 'suite',
  keyPrefix: 'conformance-evalsha',
  inspectKeys: keysUnder,
  keyExpiry: 'store',
  requireAll: true,
});

describeStoreConformance<RedisStore>({
  name: 'redis',
  createStore: () => redisStore(client),
  clock: 'store',
  capabilities: { synchronous: false, operations: ['take', 'reserve'], leases: true },
  storeScope: 'suite',
  keyPrefix: 'conformance-store',
  inspectKeys: keysUnder,
  requireAll: true,
});

// The same suites on every other client the store accepts (each opened with its library's defaults): the script's
// replies as node-redis (RESP2 and RESP3) and GLIDE hand them over, and their errors (NOSCRIPT, a missing function).
for (const [index, kind] of OTHER_CLIENTS.entries()) {
  const on = () => others.get(kind.name)!.client;
  for (const [variant, options] of [
    ['client clock, FCALL', { clock: 'client', functions: true }],
    ['client clock, EVALSHA', { clock: 'client', functions: false }],
    ['store clock', { clock: 'store' }],
  ] as const) {
    describeStoreConformance<RedisStore>({
      name: `redis on ${kind.name} (${variant})`,
      createStore: () => redisStore(on(), options),
      clock: options.clock,
      capabilities: { synchronous: false, operations: ['take', 'reserve'], leases: true },
      storeScope: 'suite',
      keyPrefix: `conformance-${index}-${options.clock}-${'functions' in options ? options.functions : 'default'}`,
      inspectKeys: keysUnder,
      ...(options.clock === 'client' ? { keyExpiry: 'store' as const } : {}),
      requireAll: true,
    });
  }
}
