import { SluiceError, type SyncStore } from '@sluice/core';
import {
  EXPIRY_GRACE_MS,
  LEASE_ID_PATTERN,
  decodeState,
  encodeState,
  evaluate,
  evaluateLease,
  type LeaseEntries,
  type LeaseRequest,
  type LeaseResult,
  type LimitRequest,
  type LimitResult,
  type ResolvedRule,
  type State,
  type StoreCapabilities,
} from '@sluice/core/store';
import { describeValue } from '@sluice/core/internal';
import type { SqliteDatabase, SqliteStatement, SqliteTransaction } from './database.js';
import { resolveOptions, type SqliteStoreOptions } from './options.js';
import { ensureSchema } from './schema.js';
import { openError, storeError } from './store-error.js';
import { Sweeper } from './sweeper.js';

/**
 * Concurrency leases live in the state table, one row per limiter key: key `${base key}:lease` (a base key ends in
 * '}', so it never equals one), rule '' (no rule id is empty), state the held leases in acquisition order as
 * `id:expiresAt` pairs joined by ',' (ids never contain ':' or ','), expires_at the latest lease's expiry.
 */
const LEASE_RULE = '';
const LEASE_OPS: readonly string[] = ['acquire', 'release', 'extend'];
const LEASE_ENTRY = /^([A-Za-z0-9_-]{1,64}):(\d{1,16})$/;

/** better-sqlite3 sets busy_timeout from its `timeout` option, 5000 ms unless told otherwise. */
const DEFAULT_BUSY_TIMEOUT_MS = 5000;

/**
 * Store on a better-sqlite3 database: one file shared by any number of connections and processes, exact.
 * Each decision is one short IMMEDIATE write transaction that reads the identity's rows, runs core's `evaluate`
 * and writes the result, so concurrent processes are serialised by SQLite's write lock. Peeks read without a
 * write transaction. Synchronous: limiters over it get `limitSync`. Time comes from the limiter's clock.
 * Runs concurrency leases too (`createConcurrencyLimiter`): each acquire, release or extend is one such transaction.
 * @example
 * const store = sqliteStore(new Database('ratelimit.db'));
 * const limiter = createLimiter({ store, rules: tokenBucket({ capacity: 20, refillRate: 10 }) });
 */
export function sqliteStore(db: SqliteDatabase, options: SqliteStoreOptions = {}): SqliteStore {
  return new SqliteStore(db, options);
}

export class SqliteStore implements SyncStore {
  readonly capabilities: StoreCapabilities & { readonly synchronous: true } = {
    synchronous: true,
    clock: 'client',
    operations: ['limit', 'reset', 'take', 'reserve', 'lease'],
  };
  /** The state table's name. */
  readonly table: string;
  /** The journal mode in effect: `wal` for files by default, `memory` for in-memory databases. */
  readonly journalMode: string;
  /** The connection's busy_timeout, ms: the longest a decision waits for another connection's write lock. */
  readonly busyTimeoutMs: number;

  private readonly selectOne: SqliteStatement;
  private readonly selectAll: SqliteStatement;
  private readonly upsert: SqliteStatement;
  private readonly remove: SqliteStatement;
  private readonly purge: SqliteStatement;
  private readonly removeAll: SqliteStatement;
  private readonly write: SqliteTransaction<(request: LimitRequest) => LimitResult>;
  private readonly leaseWrite: SqliteTransaction<(request: LeaseRequest) => LeaseResult>;
  private readonly forget: SqliteTransaction<(key: string, ruleIds: readonly string[]) => void>;
  private readonly sweepEvery: number;
  private readonly sweeper: Sweeper;
  private writes = 0;

  constructor(db: SqliteDatabase, options: SqliteStoreOptions = {}) {
    checkDatabase(db);
    const resolved = resolveOptions(options);
    this.table = resolved.table;
    this.sweepEvery = resolved.sweepEvery;
    const t = `"${resolved.table}"`;
    try {
      if (resolved.busyTimeoutMs !== undefined) db.pragma(`busy_timeout = ${resolved.busyTimeoutMs}`);
      else if (busyTimeout(db) === 0) db.pragma(`busy_timeout = ${DEFAULT_BUSY_TIMEOUT_MS}`);
      this.busyTimeoutMs = busyTimeout(db);
      // Reading the schema is the first touch of the file: a corrupt or foreign file fails here, clearly.
      db.prepare('SELECT count(*) FROM sqlite_master').get();
      if (resolved.wal && !db.memory) db.pragma('journal_mode = WAL');
      this.journalMode = String(db.pragma('journal_mode', { simple: true }));
      if (resolved.synchronous !== 'keep') db.pragma(`synchronous = ${resolved.synchronous.toUpperCase()}`);
      ensureSchema(db, resolved.table);
      this.selectOne = prepare(db, `SELECT state, expires_at FROM ${t} WHERE key = ? AND rule = ?`);
      this.selectAll = prepare(db, `SELECT rule, state, expires_at FROM ${t} WHERE key = ?`);
      this.upsert = prepare(
        db,
        `INSERT INTO ${t} (key, rule, state, expires_at) VALUES (?, ?, ?, ?)
         ON CONFLICT (key, rule) DO UPDATE SET state = excluded.state, expires_at = excluded.expires_at`,
      );
      this.remove = prepare(db, `DELETE FROM ${t} WHERE key = ? AND rule = ?`);
      this.sweeper = new Sweeper(db, resolved.table, resolved.sweepBatch);
      this.purge = prepare(db, `DELETE FROM ${t} WHERE expires_at <= ?`);
      this.removeAll = prepare(db, `DELETE FROM ${t}`);
    } catch (error) {
      if (error instanceof SluiceError) throw error;
      throw openError(db.name, error);
    }
    this.write = db.transaction((request: LimitRequest) => this.run(request));
    this.leaseWrite = db.transaction((request: LeaseRequest) => this.runLease(request));
    this.forget = db.transaction((key: string, ruleIds: readonly string[]) => {
      for (const id of ruleIds) this.remove.run(key, id);
    });
  }

  limit(request: LimitRequest): LimitResult {
    try {
      // A peek writes nothing and reads all its rows in one statement (one snapshot): no write lock needed.
      if (request.operation === 'peek' || request.cost === 0) return this.run(request);
      return this.write.immediate(request);
    } catch (error) {
      throw storeError('limit', error, this.busyTimeoutMs);
    }
  }

  reset(key: string, ruleIds: readonly string[]): void {
    try {
      this.forget.immediate(key, ruleIds);
    } catch (error) {
      throw storeError('reset', error, this.busyTimeoutMs);
    }
  }

  /**
   * Concurrency leases for one base key (acquire, release, extend), as core's `evaluateLease()` defines them: one
   * IMMEDIATE write transaction reads the key's lease row, evaluates at `request.now` and writes the row back (or
   * deletes it when no lease is left), so processes sharing the file never hold more than `limit` between them.
   */
  lease(request: LeaseRequest): LeaseResult {
    if (typeof request !== 'object' || request === null || typeof request.key !== 'string') {
      throw new SluiceError('INVALID_OPTION', `sqliteStore: lease request.key must be a string, got ${describeValue(request?.key)}`);
    }
    if (typeof request.id !== 'string' || !LEASE_ID_PATTERN.test(request.id)) {
      throw new SluiceError(
        'INVALID_OPTION',
        `sqliteStore: lease request.id must be 1 to 64 characters of letters, digits, '_' or '-', got ${describeValue(request.id)}`,
      );
    }
    if (!LEASE_OPS.includes(request.op)) {
      throw new SluiceError(
        'INVALID_OPTION',
        `sqliteStore: lease request.op must be 'acquire', 'release' or 'extend', got ${describeValue(request.op)}`,
      );
    }
    try {
      return this.leaseWrite.immediate(request);
    } catch (error) {
      throw storeError('lease', error, this.busyTimeoutMs);
    }
  }

  /** Deletes every row expired at `now` (epoch ms) and returns how many went. Reads the whole table: run it off the hot path. */
  purgeExpired(now: number = Date.now()): number {
    try {
      return this.purge.run(now).changes;
    } catch (error) {
      throw storeError('purgeExpired', error, this.busyTimeoutMs);
    }
  }

  /** Deletes every row of the state table (all limiters sharing it). */
  clear(): void {
    try {
      this.removeAll.run();
    } catch (error) {
      throw storeError('clear', error, this.busyTimeoutMs);
    }
  }

  /** Reads, evaluates and (in a write transaction) writes one request. */
  private run(request: LimitRequest): LimitResult {
    const { key, rules, now } = request;
    const evaluation = evaluate(rules, this.read(key, rules, now), now, request.cost, request.operation, request.maxWaitMs);
    if (evaluation.writes !== undefined) {
      for (let i = 0; i < rules.length; i++) {
        const { state, ttlMs } = evaluation.writes[i]!;
        // At ttl <= 0 the state equals no state (a full bucket): the row would only take space.
        if (ttlMs > 0) this.upsert.run(key, rules[i]!.id, encodeState(state), now + ttlMs);
        else this.remove.run(key, rules[i]!.id);
      }
      if (++this.writes >= this.sweepEvery) {
        this.writes = 0;
        this.sweeper.sweep(now - EXPIRY_GRACE_MS); // kept a grace past expiry, see core's EXPIRY_GRACE_MS
      }
    }
    return { now, outcomes: evaluation.outcomes };
  }

  /** Reads, evaluates and writes one lease operation; runs inside the lease write transaction. */
  private runLease(request: LeaseRequest): LeaseResult {
    const { now } = request;
    const key = `${request.key}:lease`;
    const row = this.selectOne.get(key, LEASE_RULE) as [string, number] | undefined;
    const evaluation = evaluateLease(row !== undefined && row[1] > now ? decodeLeases(row[0]) : undefined, request, now);
    if (evaluation.ttlMs > 0) this.upsert.run(key, LEASE_RULE, encodeLeases(evaluation.entries), now + evaluation.ttlMs);
    else if (row !== undefined) this.remove.run(key, LEASE_RULE);
    if (++this.writes >= this.sweepEvery) {
      this.writes = 0;
      this.sweeper.sweep(now - EXPIRY_GRACE_MS);
    }
    return evaluation.result;
  }

  private read(key: string, rules: readonly ResolvedRule[], now: number): Array<State | undefined> {
    if (rules.length === 1) {
      const row = this.selectOne.get(key, rules[0]!.id) as [string, number] | undefined;
      return [row !== undefined && row[1] > now ? decodeState(row[0]) : undefined];
    }
    const rows = this.selectAll.all(key) as Array<[string, string, number]>;
    const states: Array<State | undefined> = new Array(rules.length);
    for (let i = 0; i < rules.length; i++) {
      const id = rules[i]!.id;
      const row = rows.find((r) => r[0] === id);
      states[i] = row !== undefined && row[2] > now ? decodeState(row[1]) : undefined;
    }
    return states;
  }
}

function encodeLeases(entries: LeaseEntries): string {
  let text = '';
  for (const [id, expiresAt] of entries) text += (text === '' ? '' : ',') + id + ':' + expiresAt;
  return text;
}

/** The held leases of a row; a malformed entry (a row written by hand, or damaged) is dropped rather than trusted. */
function decodeLeases(text: string): LeaseEntries {
  const entries: Array<readonly [string, number]> = [];
  if (typeof text !== 'string' || text === '') return entries;
  for (const part of text.split(',')) {
    const match = LEASE_ENTRY.exec(part);
    if (match !== null) entries.push([match[1]!, Number(match[2])]);
  }
  return entries;
}

/** Raw rows (arrays) and plain numbers whatever `defaultSafeIntegers` the user set on the connection. */
function prepare(db: SqliteDatabase, sql: string): SqliteStatement {
  const statement = db.prepare(sql).safeIntegers(false);
  return /^\s*SELECT/i.test(sql) ? statement.raw(true) : statement;
}

function busyTimeout(db: SqliteDatabase): number {
  return Number(db.pragma('busy_timeout', { simple: true }));
}

function checkDatabase(db: unknown): asserts db is SqliteDatabase {
  const candidate = db as Partial<SqliteDatabase> | null;
  if (
    typeof candidate !== 'object' ||
    candidate === null ||
    typeof candidate.prepare !== 'function' ||
    typeof candidate.pragma !== 'function' ||
    typeof candidate.transaction !== 'function'
  ) {
    throw new SluiceError('INVALID_OPTION', 'sqliteStore: db must be a better-sqlite3 Database, such as new Database("ratelimit.db")');
  }
  if (candidate.open !== true) {
    throw new SluiceError('INVALID_OPTION', 'sqliteStore: db is closed; pass an open better-sqlite3 Database');
  }
  if (candidate.readonly === true) {
    throw new SluiceError(
      'STORE_ERROR',
      `sqliteStore: the database ${JSON.stringify(candidate.name)} was opened with { readonly: true }, but every ` +
        'decision writes: open it without readonly',
    );
  }
}
