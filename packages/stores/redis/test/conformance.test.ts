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

// Client clock: the suite drives a fake clock through every time-driven vector. Redis expires keys in real
// time, so key inspection is left to the store-clock run below, where both clocks are the same.
describeStoreConformance<RedisStore>({
  name: 'redis',
  createStore: () => redisStore(client, { clock: 'client' }),
  clock: 'client',
  capabilities: { synchronous: false, operations: ['take', 'reserve'], leases: true },
  storeScope: 'suite',
});

// The script run by EVALSHA (as on a Cluster, or where Functions are unavailable) rather than as a Function.
describeStoreConformance<RedisStore>({
  name: 'redis (EVALSHA)',
  createStore: () => redisStore(client, { clock: 'client', functions: false }),
  clock: 'client',
  capabilities: { synchronous: false, operations: ['take', 'reserve'], leases: true },
  storeScope: 'suite',
  keyPrefix: 'conformance-evalsha',
});

describeStoreConformance<RedisStore>({
  name: 'redis',
  createStore: () => redisStore(client),
  clock: 'store',
  capabilities: { synchronous: false, operations: ['take', 'reserve'], leases: true },
  storeScope: 'suite',
  keyPrefix: 'conformance-store',
  inspectKeys: ({ prefix }) => client.keys(`${prefix}:*`),
});
