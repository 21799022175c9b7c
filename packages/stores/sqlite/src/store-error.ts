import { SluiceError } from '@sluice/core';

/** better-sqlite3 throws `SqliteError` with the extended result code as `code`, e.g. `SQLITE_BUSY_SNAPSHOT`. */
export function sqliteCode(error: unknown): string {
  const code = (error as { code?: unknown } | null)?.code;
  return typeof code === 'string' ? code : 'UNKNOWN';
}

/** Wraps a failure of a decision or a reset, so that the limiter's `onStoreError` policy handles it. */
export function storeError(action: string, error: unknown, busyTimeoutMs: number): SluiceError {
  const code = sqliteCode(error);
  const message = error instanceof Error ? error.message : String(error);
  if (code.startsWith('SQLITE_BUSY') || code.startsWith('SQLITE_LOCKED')) {
    return new SluiceError(
      'STORE_ERROR',
      `sqliteStore: ${action} gave up: another connection held the database lock for longer than busy_timeout ` +
        `(${busyTimeoutMs} ms) (${code}: ${message})`,
      { cause: error },
    );
  }
  return new SluiceError('STORE_ERROR', `sqliteStore: ${action} failed: ${message} (${code})`, { cause: error });
}

/** Explains why the database given to the constructor cannot hold the store. */
export function openError(file: string, error: unknown): SluiceError {
  const code = sqliteCode(error);
  const message = error instanceof Error ? error.message : String(error);
  const where = file === '' || file === ':memory:' ? 'the database' : `the database file ${JSON.stringify(file)}`;
  let advice: string;
  if (code.startsWith('SQLITE_READONLY')) {
    advice =
      `${where} is read-only, but every decision writes: open it writable (check the file's and its folder's ` +
      `permissions, and do not pass { readonly: true } to better-sqlite3)`;
  } else if (code === 'SQLITE_NOTADB' || code.startsWith('SQLITE_CORRUPT')) {
    advice =
      `${where} is not a valid SQLite database (corrupt, or another kind of file): restore it, or point the ` +
      `store at a new path and it will create its table there`;
  } else if (code.startsWith('SQLITE_BUSY')) {
    advice = `${where} stayed locked by another connection while the store set it up: retry, or raise busyTimeout`;
  } else if (code.startsWith('SQLITE_CANTOPEN') || code.startsWith('SQLITE_IOERR') || code === 'SQLITE_FULL') {
    advice = `${where} cannot be read or written (disk full, missing folder or I/O error)`;
  } else {
    advice = `${where} could not be prepared for the store`;
  }
  return new SluiceError('STORE_ERROR', `sqliteStore: ${advice} (${code}: ${message})`, { cause: error });
}
