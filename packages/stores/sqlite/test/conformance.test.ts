import Database from 'better-sqlite3';
import { describeStoreConformance } from '@sluice/conformance';
import { afterAll } from 'vitest';
import { sqliteStore, type SqliteStore } from '../src/index.js';
import { tempFolder } from './helpers.js';

// A fresh database file per test, in a temp folder, with the store's defaults (WAL, synchronous=NORMAL).
const folder = tempFolder('conformance');
const databases = new WeakMap<SqliteStore, Database.Database>();
let files = 0;
afterAll(() => folder.remove());

describeStoreConformance<SqliteStore>({
  name: 'sqlite',
  createStore: () => {
    const db = new Database(folder.file(`conformance-${++files}.db`));
    const store = sqliteStore(db);
    databases.set(store, db);
    return store;
  },
  teardown: (store) => {
    databases.get(store)?.close();
  },
  clock: 'client',
  capabilities: { synchronous: true, operations: ['take', 'reserve'], leases: true },
  // A rule's row shows as `key:rule`; a lease row (rule '') as its key, `base key:lease`.
  inspectKeys: ({ store, prefix, now }) =>
    databases
      .get(store)!
      .prepare(
        `SELECT CASE rule WHEN '' THEN key ELSE key || ':' || rule END FROM sluice_state WHERE substr(key, 1, ?) = ? AND expires_at > ?`,
      )
      .pluck()
      .all(prefix.length + 1, `${prefix}:`, now) as string[],
  requireAll: true,
});
