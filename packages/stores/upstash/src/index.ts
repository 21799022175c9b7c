export { UpstashStore, upstashStore } from './upstash-store.js';
export type { UpstashClient, UpstashStoreOptions } from './upstash-store.js';
export { UPSTASH_LIMIT_SCRIPT } from './upstash-script.js';
