export { tieredStore } from './tiered-store.js';
export type { TieredStore, TierStats } from './tiered-store.js';
export type { AsyncCountingOptions, LeaseOptions, TierStrategy, TieredStoreOptions } from './options.js';
