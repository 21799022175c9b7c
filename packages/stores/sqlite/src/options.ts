import { SluiceError, type Duration } from '@sluice/core';
import { describeValue, optionNames, rejectUnknownOptions, timerDuration } from '@sluice/core/internal';

export interface SqliteStoreOptions {
  /**
   * Name of the state table; `<table>_meta` holds its schema version. Letters, digits and `_`, at most 48.
   * @default 'sluice_state'
   */
  table?: string;
  /**
   * Switch the file to WAL (`PRAGMA journal_mode = WAL`), so that peeks and other readers never wait for the
   * writer. WAL is a property of the file and stays set. `false` leaves the journal mode as it is; decisions stay
   * exact either way, since every write is a transaction. In-memory databases have no WAL and are left alone.
   * @default true
   */
  wal?: boolean;
  /**
   * How long a decision waits for another connection's write lock before it fails with STORE_ERROR (and the
   * limiter's `onStoreError` policy answers). The store is synchronous, so this wait blocks the thread: keep it
   * short. Sets `PRAGMA busy_timeout` on the connection you pass. `0` fails at once when the file is locked.
   * Milliseconds or a string like `'250ms'`.
   * @default the connection's own setting (better-sqlite3's `timeout`, 5000 ms) or 5000 ms when it is 0
   */
  busyTimeout?: Duration;
  /**
   * `PRAGMA synchronous` for the connection. `'normal'` with WAL never corrupts the file and survives a process
   * crash; a power loss may forget the last decisions, which a rate limiter can afford. `'full'` syncs to disk on
   * every decision (far slower). `'keep'` leaves the connection as it is.
   * @default 'normal'
   */
  synchronous?: 'normal' | 'full' | 'keep';
  /**
   * Expired rows are deleted incrementally: every `sweepEvery` writes (per connection), the next `sweepBatch` rows
   * in key order are examined and the expired ones deleted, inside that decision's transaction. The defaults
   * examine two rows per write: a pass over a table of R rows completes within R / 2 writes.
   * @default 128
   */
  sweepEvery?: number;
  /** Rows examined per sweep. @default 256 */
  sweepBatch?: number;
}

export interface ResolvedOptions {
  table: string;
  wal: boolean;
  busyTimeoutMs: number | undefined;
  synchronous: 'normal' | 'full' | 'keep';
  sweepEvery: number;
  sweepBatch: number;
}

const KNOWN = optionNames<SqliteStoreOptions>({
  table: true,
  wal: true,
  busyTimeout: true,
  synchronous: true,
  sweepEvery: true,
  sweepBatch: true,
});
const TABLE_PATTERN = /^[A-Za-z_][A-Za-z0-9_]{0,47}$/;

export function resolveOptions(raw: unknown): ResolvedOptions {
  if (typeof raw !== 'object' || raw === null || Array.isArray(raw)) {
    throw new SluiceError('INVALID_OPTION', `sqliteStore: options must be an object, got ${describeValue(raw)}`);
  }
  const options = raw as Record<string, unknown>;
  rejectUnknownOptions(options, KNOWN, 'sqliteStore');
  const table = options.table ?? 'sluice_state';
  if (typeof table !== 'string' || !TABLE_PATTERN.test(table)) {
    throw new SluiceError(
      'INVALID_OPTION',
      `sqliteStore: table must be 1 to 48 letters, digits or '_' not starting with a digit, got ${describeValue(table)}`,
    );
  }
  const wal = options.wal ?? true;
  if (typeof wal !== 'boolean') {
    throw new SluiceError('INVALID_OPTION', `sqliteStore: wal must be true or false, got ${describeValue(wal)}`);
  }
  const busyTimeoutMs =
    // SQLite keeps busy_timeout in a C int: the timer range fits it.
    options.busyTimeout === undefined ? undefined : timerDuration(options.busyTimeout, 'sqliteStore: busyTimeout', 0);
  const synchronous = options.synchronous ?? 'normal';
  if (synchronous !== 'normal' && synchronous !== 'full' && synchronous !== 'keep') {
    throw new SluiceError(
      'INVALID_OPTION',
      `sqliteStore: synchronous must be 'normal', 'full' or 'keep', got ${describeValue(synchronous)}`,
    );
  }
  return {
    table,
    wal,
    busyTimeoutMs,
    synchronous,
    sweepEvery: positive(options.sweepEvery ?? 128, 'sweepEvery'),
    sweepBatch: positive(options.sweepBatch ?? 256, 'sweepBatch'),
  };
}

function positive(value: unknown, field: string): number {
  if (typeof value !== 'number' || !Number.isSafeInteger(value) || value < 1 || value > 1_000_000) {
    throw new SluiceError('INVALID_OPTION', `sqliteStore: ${field} must be an integer from 1 to 1000000, got ${describeValue(value)}`);
  }
  return value;
}
