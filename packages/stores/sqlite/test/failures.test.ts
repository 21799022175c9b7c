import { fork } from 'node:child_process';
import { chmodSync, closeSync, openSync, writeSync, writeFileSync } from 'node:fs';
import Database from 'better-sqlite3';
import { createLimiter, fixedWindow, isSluiceError, type SluiceError } from '@sluice/core';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { sqliteStore } from '../src/index.js';
import { unprivilegedNode, unprivilegedRuntime } from './fixtures/unprivileged-runtime.js';
import { tempFolder } from './helpers.js';

const folder = tempFolder('faults');
const open: Database.Database[] = [];
let counter = 0;

function database(file: string, options?: Database.Options): Database.Database {
  const db = new Database(file, options);
  open.push(db);
  return db;
}

afterEach(() => {
  for (const db of open.splice(0).reverse()) {
    if (db.open && db.inTransaction) db.exec('ROLLBACK');
    if (db.open) db.close();
  }
});
const cleanups: Array<() => void> = [];
afterAll(() => {
  folder.remove();
  for (const cleanup of cleanups) cleanup();
});

const CLOCK_START = 1_800_000_000_000;
const rules = fixedWindow({ limit: 5, window: '1m' });

function thrown(fn: () => unknown): SluiceError {
  try {
    fn();
  } catch (error) {
    if (isSluiceError(error)) return error;
    throw new Error(`expected a SluiceError, got ${String(error)}`);
  }
  throw new Error('expected an error, none was thrown');
}

describe('a write lock held by another connection beyond busy_timeout', () => {
  function locked() {
    const file = folder.file(`busy${++counter}.db`);
    const store = sqliteStore(database(file), { busyTimeout: '20ms' });
    const blocker = database(file);
    blocker.exec('BEGIN IMMEDIATE'); // holds the write lock until COMMIT
    return { store, blocker };
  }

  it('limitSync answers through the failure policy, degraded, with the SQLITE_BUSY cause', () => {
    const { store, blocker } = locked();
    const limiter = createLimiter({ store, rules, clock: () => CLOCK_START, circuitBreaker: false });
    const started = performance.now();
    const decision = limiter.limitSync('a');
    expect(performance.now() - started).toBeGreaterThanOrEqual(15); // it did wait for the lock first
    expect(decision).toMatchObject({ allowed: true, degraded: true, reason: 'store_unavailable' });
    const error = decision.error as SluiceError;
    expect(isSluiceError(error)).toBe(true);
    expect(error.code).toBe('STORE_ERROR');
    expect(error.message).toMatch(/held the database lock for longer than busy_timeout \(20 ms\)/);
    expect((error.cause as { code?: string }).code).toBe('SQLITE_BUSY');
    blocker.exec('COMMIT');
    expect(limiter.limitSync('a')).toMatchObject({ allowed: true, degraded: false, remaining: 4 });
  });

  it('limit() resolves degraded (no rejection), and a deny policy denies', async () => {
    const { store } = locked();
    const open = createLimiter({ store, rules, clock: () => CLOCK_START, circuitBreaker: false });
    await expect(open.limit('a')).resolves.toMatchObject({ allowed: true, degraded: true });
    const closed = createLimiter({ store, rules, clock: () => CLOCK_START, onStoreError: 'deny', circuitBreaker: false });
    await expect(closed.limit('a')).resolves.toMatchObject({ allowed: false, degraded: true, reason: 'store_unavailable' });
  });

  it('peek still answers from a read snapshot, without waiting', () => {
    const { store, blocker } = locked();
    const limiter = createLimiter({ store, rules, clock: () => CLOCK_START, circuitBreaker: false });
    blocker.exec(`INSERT INTO sluice_state VALUES ('uncommitted', 'x', '1', ${CLOCK_START + 60_000})`);
    expect(limiter.peekSync('a')).toMatchObject({ allowed: true, degraded: false, remaining: 5 });
  });

  it('reset fails with STORE_ERROR instead of hanging', () => {
    const { store } = locked();
    expect(thrown(() => store.reset('k', ['r'])).code).toBe('STORE_ERROR');
  });
});

describe('files the store cannot use fail at construction with a clear SluiceError', () => {
  it('a file that is not a database', () => {
    const file = folder.file('not-a-db.db');
    writeFileSync(file, 'these bytes are a text file, not a SQLite database. '.repeat(200));
    const error = thrown(() => sqliteStore(database(file)));
    expect(error.code).toBe('STORE_ERROR');
    expect(error.message).toMatch(/not-a-db\.db" is not a valid SQLite database.*SQLITE_NOTADB/);
    expect((error.cause as { code?: string }).code).toBe('SQLITE_NOTADB');
  });

  it('a database whose schema page is corrupt', () => {
    const file = folder.file('corrupt.db');
    const setup = database(file);
    sqliteStore(setup, { wal: false });
    setup.close();
    const fd = openSync(file, 'r+');
    writeSync(fd, Buffer.alloc(400, 0xa5), 0, 400, 100); // page 1's b-tree header and cell pointers, past the file header
    closeSync(fd);
    const error = thrown(() => sqliteStore(database(file)));
    expect(error.code).toBe('STORE_ERROR');
    expect(error.message).toMatch(/corrupt\.db" is not a valid SQLite database.*SQLITE_CORRUPT/);
  });

  it('a connection opened read-only', () => {
    const file = folder.file('readonly-flag.db');
    database(file).close();
    const error = thrown(() => sqliteStore(database(file, { readonly: true })));
    expect(error.code).toBe('STORE_ERROR');
    expect(error.message).toMatch(/opened with \{ readonly: true \}.*open it without readonly/);
  });

  it('a file the process may read but not write', async () => {
    const file = folder.file('readonly-file.db');
    sqliteStore(database(file)); // a valid store file, created by us
    open.pop()!.close();
    chmodSync(file, 0o444);
    chmodSync(folder.path, 0o755);
    let report: { threw: boolean; sluice?: boolean; code?: string; message?: string; cause?: string };
    if (process.getuid?.() === 0) {
      // root writes any file whatever its mode: open it as an unprivileged user instead.
      const runtime = tempFolder('runtime');
      cleanups.push(runtime.remove);
      // No inherited execArgv or NODE_OPTIONS: vitest preloads files from the checkout, which that user may not read.
      const { NODE_OPTIONS: _inherited, ...env } = process.env;
      const child = fork(unprivilegedRuntime(runtime.path), [file], {
        execPath: unprivilegedNode(runtime.path),
        uid: 65534,
        gid: 65534,
        execArgv: [],
        env,
        stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
      });
      report = await new Promise((resolve, reject) => {
        child.once('message', resolve);
        child.once('exit', (code) => reject(new Error(`open-as-user exited with ${code} before reporting`)));
      });
    } else {
      try {
        sqliteStore(database(file));
        report = { threw: false };
      } catch (error) {
        const e = error as SluiceError;
        report = { threw: true, sluice: isSluiceError(e), code: e.code, message: e.message, cause: (e.cause as { code?: string }).code };
      }
    }
    expect(report).toMatchObject({ threw: true, sluice: true, code: 'STORE_ERROR' });
    expect(report.message).toMatch(/readonly-file\.db" is read-only, but every decision writes/);
    expect(report.cause).toMatch(/^SQLITE_READONLY/);
  }, 20_000);
});

describe('a connection closed under the store', () => {
  it('turns decisions into degraded answers, not exceptions', () => {
    const db = database(folder.file('closed.db'));
    const limiter = createLimiter({ store: sqliteStore(db), rules, clock: () => CLOCK_START, onStoreError: 'deny', circuitBreaker: false });
    db.close();
    expect(limiter.limitSync('a')).toMatchObject({ allowed: false, degraded: true, reason: 'store_unavailable' });
  });
});
