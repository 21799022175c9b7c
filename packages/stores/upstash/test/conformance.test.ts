/**
 * The store conformance suite through the fixture, both clocks: the limiter's fake clock (every time-driven
 * vector) and Redis TIME (the time-independent vectors, real expiry, and key inspection through the client).
 * Runs in Node and in edge-runtime like every test here.
 */
import { describeStoreConformance } from '@sluice/conformance';
import { upstashStore, type UpstashStore } from '../src/index.js';
import { client, token, url } from './helpers.js';

const redis = client();

describeStoreConformance<UpstashStore>({
  name: 'upstash',
  createStore: () => upstashStore(redis, { clock: 'client' }),
  clock: 'client',
  capabilities: { synchronous: false, modes: ['take', 'reserve'], leases: true },
  storeScope: 'suite',
});

describeStoreConformance<UpstashStore>({
  name: 'upstash',
  createStore: () => upstashStore(redis),
  clock: 'store',
  capabilities: { synchronous: false, modes: ['take', 'reserve'], leases: true },
  storeScope: 'suite',
  inspectKeys: ({ prefix }) => redis.keys(`${prefix}:*`),
});

// The store's own REST client (`{ url, token }`, upstashRest), both clocks: the same vectors as on @upstash/redis.
describeStoreConformance<UpstashStore>({
  name: 'upstash (own REST client)',
  createStore: () => upstashStore({ url, token }, { clock: 'client' }),
  clock: 'client',
  capabilities: { synchronous: false, modes: ['take', 'reserve'], leases: true },
  storeScope: 'suite',
});

describeStoreConformance<UpstashStore>({
  name: 'upstash (own REST client)',
  createStore: () => upstashStore({ url, token }),
  clock: 'store',
  capabilities: { synchronous: false, modes: ['take', 'reserve'], leases: true },
  storeScope: 'suite',
  inspectKeys: ({ prefix }) => redis.keys(`${prefix}:*`),
});
