// The class is a type only (for `store: RedisStore` annotations): a store is made by its factory.
export { redisStore } from './redis-store.js';
export type { RedisStore, RedisStoreOptions } from './redis-store.js';
export type { RedisClient } from './clients/index.js';
export { redisConfigSource } from './redis-config-source.js';
export type { RedisConfigSource, RedisConfigSourceOptions } from './redis-config-source.js';
export { redisAnalyticsStore } from './redis-analytics-store.js';
export type { RedisAnalyticsStoreOptions } from './redis-analytics-store.js';
