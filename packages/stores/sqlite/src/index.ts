export { SqliteStore, sqliteStore } from './sqlite-store.js';
export type { SqliteStoreOptions } from './options.js';
export type { SqliteDatabase, SqliteStatement, SqliteTransaction } from './database.js';
export { SCHEMA_VERSION } from './schema.js';
