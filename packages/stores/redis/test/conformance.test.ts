import { afterAll, beforeAll } from 'vitest';
import { Redis } from 'ioredis';
import { describeStoreConformance } from '@sluice/conformance';
import { redisStore, type RedisStore } from '../src/index.js';
import { startRedis, type RedisServer } from '../../../../test/harness/redis.js';

let server: RedisServer;
let client: Redis;

beforeAll(async () => {
  server = await startRedis();
  client = new Redis({ host: server.host, port: server.port, enableAutoPipelining: true });
});

afterAll(async () => {
  client?.disconnect();
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
