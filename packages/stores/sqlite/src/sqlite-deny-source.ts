/**
 * The SQLite config source's deny lists (core's DenyListSource), in three tables beside the documents' table:
 * - `${table}_deny` (name, match, entry, until): the entries, one row each, keyed by list and match, with the entry's
 *   `until` (null: none) indexed, so a change's `expireBefore` finds ended entries without reading the list;
 * - `${table}_deny_meta` (name, epoch, version): where each list is;
 * - `${table}_deny_log` (name, version, change): the last DENY_LOG_LENGTH change texts of each list.
 * A change is one IMMEDIATE transaction (the write lock taken before the version is read), so processes sharing the
 * file never give two changes one version. Reads run in one transaction each, so where the list is and what is read
 * come from one snapshot. Pages go by match (keyset pagination): a page's cursor is the last match it read after a
 * `>`, so `'0'` stays the start and the end. SQLite has no push: watchers read the changes periodically.
 */
import { SluiceError } from '@sluice/core';
import {
  DENY_EXPIRE_MAX,
  DENY_LOG_LENGTH,
  changeText,
  entryText,
  newEpoch,
  stampChangeText,
  type DenyChangeResult,
  type DenyChangesRead,
  type DenyListChange,
  type DenyListSource,
  type DenyListVersion,
  type DenyPage,
} from '@sluice/core/config';
import { describeValue, positiveInteger } from '@sluice/core/internal';
import type { SqliteDatabase } from './database.js';

/** What a cursor after the first page starts with; the last match read follows. */
const AFTER = '>';

/** Creates the tables if missing and prepares the statements; `failure` wraps a SQLite error with what was done. */
export function sqliteDenySource(
  db: SqliteDatabase,
  table: string,
  failure: (what: string, error: unknown) => SluiceError,
): DenyListSource {
  const [entries, meta, log] = [`"${table}_deny"`, `"${table}_deny_meta"`, `"${table}_deny_log"`];
  db.exec(
    `CREATE TABLE IF NOT EXISTS ${entries} (name TEXT NOT NULL, match TEXT NOT NULL, entry TEXT NOT NULL, until INTEGER, PRIMARY KEY (name, match)) WITHOUT ROWID;
     CREATE INDEX IF NOT EXISTS "${table}_deny_until" ON ${entries} (name, until) WHERE until IS NOT NULL;
     CREATE TABLE IF NOT EXISTS ${meta} (name TEXT PRIMARY KEY NOT NULL, epoch TEXT NOT NULL, version INTEGER NOT NULL) WITHOUT ROWID;
     CREATE TABLE IF NOT EXISTS ${log} (name TEXT NOT NULL, version INTEGER NOT NULL, change TEXT NOT NULL, PRIMARY KEY (name, version)) WITHOUT ROWID;`,
  );
  const selectMeta = db.prepare(`SELECT epoch, version FROM ${meta} WHERE name = ?`);
  const insertMeta = db.prepare(`INSERT INTO ${meta} (name, epoch, version) VALUES (?, ?, 0)`);
  const setVersion = db.prepare(`UPDATE ${meta} SET version = ? WHERE name = ?`);
  const clearEntries = db.prepare(`DELETE FROM ${entries} WHERE name = ?`);
  const clearLog = db.prepare(`DELETE FROM ${log} WHERE name = ?`);
  const removeEntry = db.prepare(`DELETE FROM ${entries} WHERE name = ? AND match = ?`);
  const upsertEntry = db.prepare(
    `INSERT INTO ${entries} (name, match, entry, until) VALUES (?, ?, ?, ?) ON CONFLICT (name, match) DO UPDATE SET entry = excluded.entry, until = excluded.until`,
  );
  const selectEnded = db.prepare(
    `SELECT match FROM ${entries} WHERE name = ? AND until IS NOT NULL AND until <= ? ORDER BY until LIMIT ${DENY_EXPIRE_MAX}`,
  );
  const appendLog = db.prepare(`INSERT INTO ${log} (name, version, change) VALUES (?, ?, ?)`);
  const trimLog = db.prepare(`DELETE FROM ${log} WHERE name = ? AND version <= ?`);
  const selectLog = db.prepare(`SELECT change FROM ${log} WHERE name = ? AND version > ? ORDER BY version`);
  const firstPage = db.prepare(`SELECT match, entry FROM ${entries} WHERE name = ? ORDER BY match LIMIT ?`);
  const nextPage = db.prepare(`SELECT match, entry FROM ${entries} WHERE name = ? AND match > ? ORDER BY match LIMIT ?`);

  const where = (name: string): DenyListVersion | undefined => selectMeta.get(name) as DenyListVersion | undefined;
  /** The next version after `at`: its text kept in the log (the last DENY_LOG_LENGTH). */
  const record = (name: string, at: DenyListVersion, text: string): DenyListVersion => {
    const made = { epoch: at.epoch, version: at.version + 1 };
    setVersion.run(made.version, name);
    appendLog.run(name, made.version, stampChangeText(text, made));
    trimLog.run(name, made.version - DENY_LOG_LENGTH);
    return made;
  };

  const change = db.transaction((name: string, requested: DenyListChange): DenyChangeResult => {
    let at = where(name);
    if (at === undefined) {
      // A new life of the list. Rows left without their meta row are the remains of a list the file partly lost;
      // watchers were told it is gone (no version), so the new list starts empty, as they believe.
      at = { epoch: newEpoch(), version: 0 };
      clearEntries.run(name);
      clearLog.run(name);
      insertMeta.run(name, at.epoch);
    }
    if (requested.clear === true) clearEntries.run(name);
    let removed = 0;
    for (const match of requested.remove ?? []) removed += removeEntry.run(name, match).changes;
    for (const entry of requested.add ?? []) upsertEntry.run(name, entry.match, entryText(entry), entry.until ?? null);
    let made = record(name, at, changeText(requested));
    if (requested.expireBefore !== undefined) {
      // Ended entries go as a change of their own, the next version, which watchers apply like any other.
      const ended = (selectEnded.all(name, requested.expireBefore) as Array<{ match: string }>).map((row) => row.match);
      for (const match of ended) removeEntry.run(name, match);
      if (ended.length > 0) made = record(name, made, changeText({ remove: ended }));
    }
    return { ...made, removed };
  });

  const readChanges = db.transaction((name: string, since: DenyListVersion | undefined): DenyChangesRead => {
    const version = where(name);
    if (version === undefined || since === undefined || since.epoch !== version.epoch || since.version > version.version)
      return { version, changes: undefined };
    const changes = (selectLog.all(name, since.version) as Array<{ change: string }>).map((row) => row.change);
    // Fewer than the versions between: the log no longer holds them all (trimmed, or partly lost).
    return { version, changes: changes.length === version.version - since.version ? changes : undefined };
  });

  const readPage = db.transaction((name: string, after: string | undefined, count: number): DenyPage => {
    const version = where(name);
    if (version === undefined) return { entries: [], cursor: '0', version: undefined };
    // One row more than asked says whether a page follows, so the last page ends the read itself.
    const rows = (after === undefined ? firstPage.all(name, count + 1) : nextPage.all(name, after, count + 1)) as Array<{
      match: string;
      entry: string;
    }>;
    const page = rows.slice(0, count);
    return {
      entries: page.map((row) => row.entry),
      cursor: rows.length > count ? AFTER + page.at(-1)!.match : '0',
      version: { epoch: version.epoch, version: version.version },
    };
  });

  const guarded =
    <A extends unknown[], R>(what: (name: string) => string, run: (name: string, ...rest: A) => R) =>
    (name: string, ...rest: A): R => {
      try {
        return run(name, ...rest);
      } catch (error) {
        if (error instanceof SluiceError) throw error;
        throw failure(what(name), error);
      }
    };
  return {
    // IMMEDIATE: two processes that both read the version first would otherwise deadlock on the upgrade to a write.
    change: guarded(
      (name) => `changing the deny list of ${JSON.stringify(name)} failed`,
      (name, requested: DenyListChange) => change.immediate(name, requested),
    ),
    readChanges: guarded((name) => `reading the deny list changes of ${JSON.stringify(name)} failed`, readChanges),
    readPage: guarded(
      (name) => `reading the deny list of ${JSON.stringify(name)} failed`,
      (name, cursor: string, count: number) => {
        if (typeof cursor !== 'string' || (cursor !== '0' && !cursor.startsWith(AFTER))) {
          throw new SluiceError(
            'INVALID_OPTION',
            `sqliteConfigSource: deny.readPage's cursor must be '0' or the cursor a page answered, got ${describeValue(cursor)}`,
          );
        }
        positiveInteger(count, `sqliteConfigSource: deny.readPage's count`);
        return readPage(name, cursor === '0' ? undefined : cursor.slice(AFTER.length), count);
      },
    ),
  };
}
