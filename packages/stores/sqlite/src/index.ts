// The class is a type only (for `store: SqliteStore` annotations): a store is made by its factory.
export { sqliteStore } from './sqlite-store.js';
export type { SqliteStore } from './sqlite-store.js';
export type { SqliteStoreOptions } from './options.js';
export type { SqliteDatabase, SqliteStatement, SqliteTransaction } from './database.js';
export { SCHEMA_VERSION } from './schema.js';
export { sqliteConfigSource } from './sqlite-config-source.js';
export type { SqliteConfigSource, SqliteConfigSourceOptions } from './sqlite-config-source.js';
export { sqliteAnalyticsStore } from './sqlite-analytics-store.js';
export type { SqliteAnalyticsStoreOptions } from './sqlite-analytics-store.js';
