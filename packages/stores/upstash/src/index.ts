// The class is a type only (for `store: UpstashStore` annotations): a store is made by its factory.
export { UPSTASH_MAX_REQUEST_BYTES, upstashStore } from './upstash-store.js';
export type { UpstashClient, UpstashStore, UpstashStoreOptions } from './upstash-store.js';
export { upstashLeaseStore } from './upstash-lease-store.js';
export type { UpstashLeaseStore } from './upstash-lease-store.js';
export { UPSTASH_LEASE_SCRIPT, UPSTASH_LIMIT_SCRIPT } from './upstash-script.js';
export { upstashConfigSource } from './upstash-config-source.js';
export type { UpstashConfigClient, UpstashConfigSource, UpstashConfigSourceOptions } from './upstash-config-source.js';
export { upstashRest } from './upstash-rest.js';
export type { UpstashFetchInit, UpstashFetchResponse, UpstashRestClient, UpstashRestOptions } from './upstash-rest.js';
export { upstashAnalyticsStore } from './upstash-analytics-store.js';
export type { UpstashAnalyticsClient, UpstashAnalyticsStoreOptions } from './upstash-analytics-store.js';
