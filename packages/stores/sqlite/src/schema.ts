/**
 * The store's tables and their versioning. The schema version lives in `<table>_meta` (not in `user_version`,
 * which belongs to the application sharing the file). A later release that changes the layout appends a step to
 * MIGRATIONS; every connection runs pending steps inside one IMMEDIATE transaction, so two processes starting
 * together migrate once.
 *
 * Layout (version 1):
 *   <table>(key TEXT, rule TEXT, state TEXT, expires_at INTEGER, PRIMARY KEY (key, rule)) WITHOUT ROWID
 *     key:        the limiter's base key, `prefix:limiter:{identity}`
 *     rule:       the rule id
 *     state:      the algorithm's integers, comma-separated (core's encodeState)
 *     expires_at: epoch ms after which the row means nothing and may be deleted (not indexed: see sweeper.ts)
 *   Concurrency leases share it, one row per limiter key: key `<base key>:lease`, rule '', state the held leases as
 *   `id:expiresAt` pairs joined by ',', expires_at the latest lease's expiry (so the sweep and purgeExpired take
 *   them like any row, and a process of an earlier release sharing the file reads past them).
 *   <table>_meta(name TEXT PRIMARY KEY, value INTEGER) WITHOUT ROWID, row ('schema_version', 1)
 */
import { SluiceError } from '@sluice/core';
import type { SqliteDatabase } from './database.js';

export const SCHEMA_VERSION = 1;

/** MIGRATIONS[v - 1] turns version v - 1 into version v (version 0: nothing there yet). */
const MIGRATIONS: ReadonlyArray<(table: string) => string> = [
  (table) => `
    CREATE TABLE IF NOT EXISTS "${table}" (
      key TEXT NOT NULL,
      rule TEXT NOT NULL,
      state TEXT NOT NULL,
      expires_at INTEGER NOT NULL,
      PRIMARY KEY (key, rule)
    ) WITHOUT ROWID;`,
];

/** Creates or migrates the tables and proves the file is writable (the version row is written every time). */
export function ensureSchema(db: SqliteDatabase, table: string): void {
  const meta = `${table}_meta`;
  const setup = db.transaction(() => {
    db.exec(`CREATE TABLE IF NOT EXISTS "${meta}" (name TEXT PRIMARY KEY NOT NULL, value INTEGER NOT NULL) WITHOUT ROWID`);
    const row = db.prepare(`SELECT value FROM "${meta}" WHERE name = 'schema_version'`).safeIntegers(false).get() as
      { value: number } | undefined;
    const present = db.prepare(`SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?`).get(table) !== undefined;
    const recorded = row?.value ?? 0;
    if (recorded > SCHEMA_VERSION) {
      throw new SluiceError(
        'STORE_ERROR',
        `sqliteStore: table "${table}" has schema version ${recorded}, written by a newer @sluice/sqlite; this version ` +
          `knows versions up to ${SCHEMA_VERSION}: upgrade @sluice/sqlite in every process sharing the file`,
      );
    }
    // A state table dropped by hand (a quick way to forget everything) is recreated rather than left missing.
    const found = present ? recorded : 0;
    for (let version = found + 1; version <= SCHEMA_VERSION; version++) db.exec(MIGRATIONS[version - 1]!(table));
    db.prepare(
      `INSERT INTO "${meta}" (name, value) VALUES ('schema_version', ?) ON CONFLICT (name) DO UPDATE SET value = excluded.value`,
    ).run(SCHEMA_VERSION);
  });
  setup.immediate();
}
