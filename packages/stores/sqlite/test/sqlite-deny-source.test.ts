/**
 * sqliteConfigSource's deny lists on a real file, each source on a connection of its own (as processes share the
 * file): the shared deny source suite, then the tables, the remains of a partly lost list and the cursor's checks.
 */
import Database from 'better-sqlite3';
import { describeDenySourceConformance } from '@sluice/conformance';
import { afterAll, describe, expect, it } from 'vitest';
import { sqliteConfigSource } from '../src/index.js';
import { tempFolder } from './helpers.js';

const folder = tempFolder('deny');
const file = folder.file('deny.db');
const open: Database.Database[] = [];
afterAll(() => {
  for (const db of open) if (db.open) db.close();
  folder.remove();
});

/** A connection in WAL with synchronous NORMAL, as sqliteStore sets the file it shares with the config source. */
function connect(): Database.Database {
  const db = new Database(file);
  db.pragma('journal_mode = WAL');
  db.pragma('synchronous = NORMAL');
  open.push(db);
  return db;
}

const admin = connect();
/** Deletes list `name`'s rows from all three tables, as a file restored without them would hold. */
const lose = (name: string) => {
  for (const table of ['sluice_config_deny', 'sluice_config_deny_meta', 'sluice_config_deny_log'])
    admin.prepare(`DELETE FROM ${table} WHERE name = ?`).run(name);
};

describeDenySourceConformance({
  name: 'sqlite',
  createSource: () => sqliteConfigSource(connect()).deny,
  lose,
  push: false,
  countsRemoved: true,
});

describe('sqliteConfigSource deny lists', () => {
  it('keep entries, where each list is and its log in tables named after the table option', () => {
    const deny = sqliteConfigSource(connect(), { table: 'tenant_config' }).deny;
    const made = deny.change('tables', { add: [{ match: 'user:1', reason: 'r' }] }) as { epoch: string; version: number };
    expect(admin.prepare('SELECT name, match, entry FROM tenant_config_deny').all()).toEqual([
      { name: 'tables', match: 'user:1', entry: '{"match":"user:1","reason":"r"}' },
    ]);
    expect(admin.prepare('SELECT name, epoch, version FROM tenant_config_deny_meta').all()).toEqual([
      { name: 'tables', epoch: made.epoch, version: 1 },
    ]);
    expect(admin.prepare('SELECT name, version FROM tenant_config_deny_log').all()).toEqual([{ name: 'tables', version: 1 }]);
  });

  it('rows left without their meta row are the remains of a lost list: read as none, and the next change starts empty', () => {
    const deny = sqliteConfigSource(connect()).deny;
    deny.change('partly-lost', { add: [{ match: 'a' }, { match: 'b' }] });
    admin.prepare("DELETE FROM sluice_config_deny_meta WHERE name = 'partly-lost'").run();
    expect(deny.readPage('partly-lost', '0', 10)).toEqual({ entries: [], cursor: '0', version: undefined });
    expect(deny.change('partly-lost', { add: [{ match: 'c' }] })).toMatchObject({ version: 1 });
    expect(admin.prepare("SELECT match FROM sluice_config_deny WHERE name = 'partly-lost'").pluck().all()).toEqual(['c']);
    expect(admin.prepare("SELECT count(*) FROM sluice_config_deny_log WHERE name = 'partly-lost'").pluck().get()).toBe(1);
  });

  it('readPage refuses a cursor it did not answer and a count that is not a positive integer, naming the field', () => {
    const deny = sqliteConfigSource(connect()).deny;
    expect(() => deny.readPage('bad', '12', 10)).toThrow(
      /sqliteConfigSource: deny\.readPage's cursor must be '0' or the cursor a page answered, got "12"/,
    );
    expect(() => deny.readPage('bad', '0', 1.5)).toThrow(/sqliteConfigSource: deny\.readPage's count must be a positive integer, got 1\.5/);
  });
});
