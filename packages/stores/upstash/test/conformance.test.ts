/**
 * The store conformance suite through the fixture, both clocks: the limiter's fake clock (every time-driven
 * vector) and Redis TIME (the time-independent vectors, real expiry, and key inspection through the client).
 * Runs in Node and in edge-runtime like every test here. upstashLeaseStore() is upstashStore() with lease(): the
 * suite runs on it, leases included. Every run lists the store's keys on the fixture's redis-server through the
 * client; Redis expires them by its own clock, so the client-clock runs say keyExpiry: 'store' and leave expiry to
 * the store-clock runs.
 */
import { describeStoreConformance } from '@sluice/conformance';
import { upstashLeaseStore, type UpstashLeaseStore } from '../src/index.js';
import { client, token, url } from './helpers.js';

const redis = client();
const keysUnder = ({ prefix }: { prefix: string }): Promise<string[]> => redis.keys(`${prefix}:*`);

describeStoreConformance<UpstashLeaseStore>({
  name: 'upstash',
  createStore: () => upstashLeaseStore(redis, { clock: 'client' }),
  clock: 'client',
  capabilities: { synchronous: false, operations: ['take', 'reserve'], leases: true },
  storeScope: 'suite',
  inspectKeys: keysUnder,
  keyExpiry: 'store',
  requireAll: true,
});

describeStoreConformance<UpstashLeaseStore>({
  name: 'upstash',
  createStore: () => upstashLeaseStore(redis),
  clock: 'store',
  capabilities: { synchronous: false, operations: ['take', 'reserve'], leases: true },
  storeScope: 'suite',
  inspectKeys: keysUnder,
  requireAll: true,
});

// The store's own REST client (`{ url, token }`, upstashRest), both clocks: the same vectors as on @upstash/redis.
describeStoreConformance<UpstashLeaseStore>({
  name: 'upstash (own REST client)',
  createStore: () => upstashLeaseStore({ url, token }, { clock: 'client' }),
  clock: 'client',
  capabilities: { synchronous: false, operations: ['take', 'reserve'], leases: true },
  storeScope: 'suite',
  inspectKeys: keysUnder,
  keyExpiry: 'store',
  requireAll: true,
});

describeStoreConformance<UpstashLeaseStore>({
  name: 'upstash (own REST client)',
  createStore: () => upstashLeaseStore({ url, token }),
  clock: 'store',
  capabilities: { synchronous: false, operations: ['take', 'reserve'], leases: true },
  storeScope: 'suite',
  inspectKeys: keysUnder,
  requireAll: true,
});
