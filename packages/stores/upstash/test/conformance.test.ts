/**
 * The store conformance suite through the fixture, both clocks: the limiter's fake clock (every time-driven
 * vector) and Redis TIME (the time-independent vectors, real expiry, and key inspection through the client).
 * Runs in Node and in edge-runtime like every test here. upstashLeaseStore() is upstashStore() with lease(): the
 * suite runs on it, leases included.
 */
import { describeStoreConformance } from '@sluice/conformance';
import { upstashLeaseStore, type UpstashLeaseStore } from '../src/index.js';
import { client, token, url } from './helpers.js';

const redis = client();

describeStoreConformance<UpstashLeaseStore>({
  name: 'upstash',
  createStore: () => upstashLeaseStore(redis, { clock: 'client' }),
  clock: 'client',
  capabilities: { synchronous: false, operations: ['take', 'reserve'], leases: true },
  storeScope: 'suite',
});

describeStoreConformance<UpstashLeaseStore>({
  name: 'upstash',
  createStore: () => upstashLeaseStore(redis),
  clock: 'store',
  capabilities: { synchronous: false, operations: ['take', 'reserve'], leases: true },
  storeScope: 'suite',
  inspectKeys: ({ prefix }) => redis.keys(`${prefix}:*`),
});

// The store's own REST client (`{ url, token }`, upstashRest), both clocks: the same vectors as on @upstash/redis.
describeStoreConformance<UpstashLeaseStore>({
  name: 'upstash (own REST client)',
  createStore: () => upstashLeaseStore({ url, token }, { clock: 'client' }),
  clock: 'client',
  capabilities: { synchronous: false, operations: ['take', 'reserve'], leases: true },
  storeScope: 'suite',
});

describeStoreConformance<UpstashLeaseStore>({
  name: 'upstash (own REST client)',
  createStore: () => upstashLeaseStore({ url, token }),
  clock: 'store',
  capabilities: { synchronous: false, operations: ['take', 'reserve'], leases: true },
  storeScope: 'suite',
  inspectKeys: ({ prefix }) => redis.keys(`${prefix}:*`),
});
