export { RedisStore, redisStore } from './redis-store.js';
export type { RedisStoreOptions } from './redis-store.js';
