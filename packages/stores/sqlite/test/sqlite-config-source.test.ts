/**
 * sqliteConfigSource on a real file shared by two connections (as two processes share it): a row per limiter,
 * written by one connection and picked up by a watcher on the other at its next periodic read.
 */
import Database from 'better-sqlite3';
import { createLimiter, fixedWindow } from '@sluice/core';
import { readLimiterConfig, setLimiterMode, setQuota, deleteLimiterConfig, watchConfig, type ConfigWarning } from '@sluice/core/config';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { sqliteConfigSource, sqliteStore } from '../src/index.js';
import { tempFolder } from './helpers.js';

const folder = tempFolder('config');
let counter = 0;
const open: Database.Database[] = [];
afterEach(() => {
  for (const db of open.splice(0)) if (db.open) db.close();
});
afterAll(() => folder.remove());

function connections(n: number): Database.Database[] {
  const file = folder.file(`config${++counter}.db`);
  return Array.from({ length: n }, () => {
    const db = new Database(file);
    open.push(db);
    return db;
  });
}

async function until(check: () => boolean, timeoutMs: number): Promise<number> {
  const started = performance.now();
  while (!check()) {
    if (performance.now() - started > timeoutMs) throw new Error(`not within ${timeoutMs} ms`);
    await new Promise((r) => setTimeout(r, 5));
  }
  return performance.now() - started;
}

describe('sqliteConfigSource', () => {
  it('one row per limiter in its own table; a watcher on another connection picks a write up at its next read', async () => {
    const [writerDb, readerDb] = connections(2);
    const writer = sqliteConfigSource(writerDb!);
    await setQuota(writer, 'api', 'acme', { algorithm: 'fixed-window', id: 'w', limit: 5, window: '1h' });
    expect(writerDb!.prepare('SELECT name FROM sluice_config').all()).toEqual([{ name: 'api' }]);

    const limiter = createLimiter({ store: sqliteStore(readerDb!), rules: fixedWindow({ id: 'w', limit: 2, window: '1h' }), name: 'api' });
    const warnings: ConfigWarning[] = [];
    const watcher = watchConfig(limiter, sqliteConfigSource(readerDb!), { refresh: '200ms', onWarning: (w) => void warnings.push(w) });
    await watcher.ready;
    let acme = 0;
    for (let i = 0; i < 8; i++) if (limiter.limitSync('acme').allowed) acme++;
    expect([acme, limiter.limitSync('b').allowed, limiter.limitSync('b').allowed, limiter.limitSync('b').allowed]).toEqual([
      5,
      true,
      true,
      false,
    ]);
    await setLimiterMode(writer, 'api', 'off');
    expect(await until(() => limiter.mode === 'off', 2_000)).toBeLessThan(200 + 300);
    expect(limiter.limitSync('b').reason).toBe('disabled');
    await deleteLimiterConfig(writer, 'api');
    await until(() => limiter.mode === 'enforce' && limiter.quotas.size === 0, 2_000);
    expect(await readLimiterConfig(writer, 'api')).toMatchObject({ deleted: true }); // a tombstone
    await watcher.stop();
    expect(warnings).toEqual([]);
  });

  it('a connection that fails to read keeps the last configuration, with one warning naming the failure', async () => {
    const [db] = connections(1);
    const source = sqliteConfigSource(db!);
    await setLimiterMode(source, 'api', 'shadow');
    const limiter = createLimiter({ store: sqliteStore(connections(1)[0]!), rules: fixedWindow({ limit: 1, window: '1h' }), name: 'api' });
    const warnings: ConfigWarning[] = [];
    const watcher = watchConfig(limiter, source, { refresh: '50ms', onWarning: (w) => void warnings.push(w) });
    await watcher.ready;
    db!.close();
    await until(() => warnings.length > 0, 2_000);
    await new Promise((r) => setTimeout(r, 200));
    expect(limiter.mode).toBe('shadow');
    expect(warnings.map((w) => w.code)).toEqual(['read_failed']);
    expect(warnings[0]!.message).toMatch(/sqliteConfigSource: reading the configuration of "api" failed: .*not open/);
    await watcher.stop();
  });

  it('options are checked; a table name of its own', () => {
    const [db] = connections(1);
    expect(() => sqliteConfigSource({} as never)).toThrow(/sqliteConfigSource: db must be a better-sqlite3 Database/);
    expect(() => sqliteConfigSource(db!, { tabel: 'x' } as never)).toThrow(/sqliteConfigSource: unknown option "tabel"/);
    expect(() => sqliteConfigSource(db!, { table: 'x; DROP' })).toThrow(/table must be letters, digits and '_'/);
    sqliteConfigSource(db!, { table: 'limits_config' }).write('api', '{"version":1}');
    expect(db!.prepare('SELECT document FROM limits_config').all()).toEqual([{ document: '{"version":1}' }]);
  });

  it('writers on two connections at once all land (compare and set on the revision); a row that is not JSON never matches', async () => {
    const [a, b] = connections(2);
    const sources = [sqliteConfigSource(a!), sqliteConfigSource(b!)];
    await Promise.all(
      Array.from({ length: 20 }, (_, i) =>
        setQuota(sources[i % 2]!, 'race', `user${i}`, { algorithm: 'fixed-window', id: 'w', limit: 5, window: '1h' }),
      ),
    );
    const stored = await readLimiterConfig(sources[0]!, 'race');
    expect(Object.keys(stored?.quotas ?? {})).toHaveLength(20);
    expect(stored?.revision).toBe(20);
    sources[0]!.write('junk', 'not json');
    expect(await sources[1]!.replace!('junk', 0, '{}')).toBe(false);
    expect(await sources[1]!.replace!('junk', 1, '{}')).toBe(false);
  });
});
