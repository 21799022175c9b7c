// The class is a type only (for `store: MemoryStore` annotations): a store is made by its factory.
export { memoryStore } from './memory-store.js';
export type { MemoryStore, MemoryStoreOptions } from './memory-store.js';
export { memoryConfigSource } from './memory-config-source.js';
export type { MemoryConfigSource } from './memory-config-source.js';
export { memoryAnalyticsStore } from './memory-analytics-store.js';
export type { MemoryAnalyticsStoreOptions } from './memory-analytics-store.js';
