import { SluiceError } from '@sluice/core';
import type { ConfigSource, DenyListSource } from '@sluice/core/config';
import { describeValue, rejectUnknownOptions } from '@sluice/core/internal';
import type { SqliteDatabase, SqliteStatement } from './database.js';
import { sqliteDenySource } from './sqlite-deny-source.js';
import { sqliteCode } from './store-error.js';

export interface SqliteConfigSourceOptions {
  /**
   * The table holding one row per limiter: (name, document, updated_at); the deny lists are in `${table}_deny`,
   * `${table}_deny_meta` and `${table}_deny_log`. Letters, digits and `_`, at most 48. @default 'sluice_config'
   */
  table?: string;
}

export interface SqliteConfigSource extends ConfigSource {
  /**
   * The deny lists (core's DenyListSource), each entry a row of `${table}_deny`, each change one transaction.
   * No push: watchers pick changes up with their periodic readChanges.
   */
  readonly deny: DenyListSource;
}

const TABLE_PATTERN = /^[A-Za-z_][A-Za-z0-9_]{0,47}$/;

/**
 * Runtime configuration (core's `watchConfig`) in the SQLite file the processes share: one row per limiter name,
 * in a table of its own, created if missing. SQLite has no push, so instances pick a change up by the watcher's
 * periodic read (within `refresh`, 1 s by default); a read is one primary-key lookup, far below a millisecond.
 * Each deny list has tables of its own (`deny`), so a change to a list of 100,000 entries writes only its rows.
 * @example watchConfig(limiter, sqliteConfigSource(new Database('ratelimit.db')))
 */
export function sqliteConfigSource(db: SqliteDatabase, options: SqliteConfigSourceOptions = {}): SqliteConfigSource {
  if (typeof db !== 'object' || db === null || typeof (db as Partial<SqliteDatabase>).prepare !== 'function') {
    throw new SluiceError(
      'INVALID_OPTION',
      `sqliteConfigSource: db must be a better-sqlite3 Database, e.g. sqliteConfigSource(new Database('ratelimit.db')), got ${describeValue(db)}`,
    );
  }
  if (typeof options !== 'object' || options === null)
    throw new SluiceError('INVALID_OPTION', `sqliteConfigSource: options must be an object, got ${describeValue(options)}`);
  rejectUnknownOptions(options, ['table'], 'sqliteConfigSource');
  const table = options.table ?? 'sluice_config';
  if (typeof table !== 'string' || !TABLE_PATTERN.test(table)) {
    throw new SluiceError(
      'INVALID_OPTION',
      `sqliteConfigSource: table must be letters, digits and '_' (not starting with a digit), at most 48, got ${describeValue(table)}`,
    );
  }
  let select: SqliteStatement;
  let upsert: SqliteStatement;
  let remove: SqliteStatement;
  let insertNew: SqliteStatement;
  let updateOver: SqliteStatement;
  let deny: DenyListSource;
  try {
    db.exec(
      `CREATE TABLE IF NOT EXISTS "${table}" (name TEXT PRIMARY KEY NOT NULL, document TEXT NOT NULL, updated_at INTEGER NOT NULL) WITHOUT ROWID`,
    );
    select = db.prepare(`SELECT document FROM "${table}" WHERE name = ?`);
    upsert = db.prepare(
      `INSERT INTO "${table}" (name, document, updated_at) VALUES (?, ?, ?) ON CONFLICT (name) DO UPDATE SET document = excluded.document, updated_at = excluded.updated_at`,
    );
    remove = db.prepare(`DELETE FROM "${table}" WHERE name = ?`);
    // The writers' compare and set, each one statement (atomic): create only when absent; update only over the
    // revision the writer read (a row that is not JSON has none, and never matches).
    insertNew = db.prepare(`INSERT INTO "${table}" (name, document, updated_at) VALUES (?, ?, ?) ON CONFLICT (name) DO NOTHING`);
    updateOver = db.prepare(
      `UPDATE "${table}" SET document = ?, updated_at = ? WHERE name = ? AND (CASE WHEN json_valid(document) THEN json_extract(document, '$.revision') END) = ?`,
    );
    deny = sqliteDenySource(db, table, failure);
  } catch (error) {
    throw failure(`could not create or read the tables "${table}", "${table}_deny", "${table}_deny_meta" and "${table}_deny_log"`, error);
  }
  return {
    deny,
    read(name) {
      try {
        return (select.get(name) as { document: string } | undefined)?.document;
      } catch (error) {
        throw failure(`reading the configuration of ${JSON.stringify(name)} failed`, error);
      }
    },
    write(name, text) {
      try {
        upsert.run(name, text, Date.now());
      } catch (error) {
        throw failure(`writing the configuration of ${JSON.stringify(name)} failed`, error);
      }
    },
    replace(name, expectedRevision, text) {
      try {
        const result =
          expectedRevision === 0 ? insertNew.run(name, text, Date.now()) : updateOver.run(text, Date.now(), name, expectedRevision);
        return (result as { changes: number }).changes === 1;
      } catch (error) {
        throw failure(`writing the configuration of ${JSON.stringify(name)} failed`, error);
      }
    },
    remove(name) {
      try {
        remove.run(name);
      } catch (error) {
        throw failure(`removing the configuration of ${JSON.stringify(name)} failed`, error);
      }
    },
  };
}

function failure(what: string, error: unknown): SluiceError {
  const message = error instanceof Error ? error.message : String(error);
  return new SluiceError('STORE_ERROR', `sqliteConfigSource: ${what}: ${message} (${sqliteCode(error)})`, { cause: error });
}
