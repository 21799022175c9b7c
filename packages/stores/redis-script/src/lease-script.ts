/**
 * Concurrency leases in one script call (core's `evaluateLease()`, store/leases.ts), for `store.lease(request)` of the
 * Redis-protocol stores. src/lua/lease.lua, assembled and digested at build time like the limit script.
 *
 * A second script rather than an operation of the limit driver: a lease record is a sorted set, not the string state
 * the driver MGETs and SETs; a lease call is never batched with decisions; and its reply is its own. Kept apart,
 * the limit script's hot path (and its Redis Function, and its differential tests) is untouched by it, and the
 * lease script stays a page of Lua that reads like evaluateLease.
 *
 * One call carries one or more lease operations (`LeaseBatcher` coalesces those issued together), run in
 * order, each atomically on what the one before left. Per operation: KEYS[i] = `${request.key}:lease` (the
 * identity's hash tag is in the key: one slot on a Cluster); ARGV op, id, limit, ttlMs, and with the client's
 * clock '@' + now; without it the script reads Redis TIME once for the call. Reply: per operation now, ok (1/0),
 * held, expiresAt (-1 = none): the LeaseResult, integers only. The record is a sorted set (member = lease id,
 * score = its expiry in ms): expired members (score <= now) are dropped first, then the operation runs, then the
 * key expires with its latest lease, or is gone when empty. On Redis TIME the expiry is PEXPIREAT latest: the same
 * clock as TIME, exact (PEXPIRE latest - now would count from the server's own command time, which is not the TIME
 * the script read), and set only when the record changed (what dropping expired members leaves keeps its latest).
 * With the client's clock it is PEXPIRE latest - now + CLIENT_CLOCK_EXPIRY_SLACK_MS after every operation, as the
 * limit script's keys. Commands per operation: ZREMRANGEBYSCORE, ZCARD, then a grant ZADD (ZSCORE first at the
 * limit), a refusal ZSCORE and ZRANGE, a release ZREM, an extend ZSCORE and ZADD; after a change ZRANGE and
 * PEXPIREAT / PEXPIRE. TIME once per call on the store clock.
 */
import { SluiceError } from '@sluice/core';
import { LEASE_ID_PATTERN, type LeaseRequest, type LeaseResult } from '@sluice/core/store';
import { describeValue } from '@sluice/core/internal';
import { leaseScript, leaseSha1 } from 'virtual:sluice-lua';
import { runScript, type ScriptCommands } from './run-script.js';

/** The lease script for EVAL / EVALSHA: src/lua/lease.lua assembled at build time. */
export const LEASE_SCRIPT: string = leaseScript;

/** SHA-1 of LEASE_SCRIPT (hex), for EVALSHA: computed from the text at build time. */
export const LEASE_SCRIPT_SHA1: string = leaseSha1;

/** One lease call's KEYS and ARGV. */
export interface LeaseCallArguments {
  readonly keys: string[];
  readonly args: string[];
}

const OPS: ReadonlySet<unknown> = new Set(['acquire', 'release', 'extend']);

/**
 * The script call for one request, checked first: an id outside LEASE_ID_PATTERN (and any other malformed field)
 * is an INVALID_OPTION error naming `where`, thrown before anything is sent.
 */
export function leaseCall(request: LeaseRequest, clock: 'store' | 'client', where: string): LeaseCallArguments {
  const call: LeaseCallArguments = { keys: [], args: [] };
  appendLease(call, request, clock, where);
  return call;
}

/** Adds one checked request to a call (KEYS and ARGV); a malformed one throws INVALID_OPTION and adds nothing. */
function appendLease(call: LeaseCallArguments, request: LeaseRequest, clock: 'store' | 'client', where: string): void {
  if (typeof request !== 'object' || request === null) throw invalid(where, 'a lease request must be an object', request);
  const { key, op, id, limit, ttlMs, now } = request;
  if (typeof id !== 'string' || !LEASE_ID_PATTERN.test(id)) {
    throw invalid(where, "a lease id must be 1 to 64 characters of letters, digits, '_' or '-'", id);
  }
  if (typeof key !== 'string' || key === '') throw invalid(where, 'a lease key must be a non-empty string', key);
  if (!OPS.has(op)) throw invalid(where, "a lease op must be 'acquire', 'release' or 'extend'", op);
  if (!isCount(limit) || (op === 'acquire' && limit < 1)) throw invalid(where, 'a lease limit must be a positive integer', limit);
  if (!isCount(ttlMs) || (op !== 'release' && ttlMs < 1)) throw invalid(where, 'a lease ttlMs must be a positive integer', ttlMs);
  if (clock === 'client' && !isCount(now)) throw invalid(where, 'a lease request needs now, epoch ms, a non-negative integer', now);
  call.keys.push(`${key}:lease`);
  call.args.push(op, id, String(limit), String(ttlMs));
  if (clock === 'client') call.args.push(`@${now}`);
}

/** The script's reply to a call of one operation as a LeaseResult; anything but four integers is a STORE_ERROR. */
export function parseLeaseReply(reply: unknown): LeaseResult {
  return parseLeaseReplies(reply, 1)[0]!;
}

/** The reply to a call of `count` operations, one LeaseResult each; anything but 4 × count integers is a STORE_ERROR. */
export function parseLeaseReplies(reply: unknown, count: number): LeaseResult[] {
  if (!Array.isArray(reply) || reply.length !== 4 * count) {
    throw new SluiceError(
      'STORE_ERROR',
      `the lease script answered ${Array.isArray(reply) ? `${reply.length} values` : typeof reply}, expected ${4 * count} integers (4 per operation)`,
    );
  }
  const results: LeaseResult[] = [];
  for (let i = 0; i < reply.length; i += 4) {
    results.push({
      now: integer(reply[i]),
      ok: integer(reply[i + 1]) === 1,
      held: integer(reply[i + 2]),
      expiresAt: integer(reply[i + 3]),
    });
  }
  return results;
}

function isCount(value: unknown): value is number {
  return typeof value === 'number' && Number.isSafeInteger(value) && value >= 0;
}

function integer(value: unknown): number {
  const n = typeof value === 'number' ? value : typeof value === 'string' ? Number(value) : Number.NaN;
  if (!Number.isSafeInteger(n)) throw new SluiceError('STORE_ERROR', `the lease script answered a non-integer ${String(value)}`);
  return n;
}

function invalid(where: string, what: string, value: unknown): SluiceError {
  return new SluiceError('INVALID_OPTION', `${where}: ${what}, got ${describeValue(value)}`);
}

/** One lease operation: EVALSHA of LEASE_SCRIPT (EVAL once on NOSCRIPT), its reply parsed. Rejects on a malformed request. */
export async function runLease(
  commands: ScriptCommands,
  request: LeaseRequest,
  clock: 'store' | 'client',
  where: string,
): Promise<LeaseResult> {
  const { keys, args } = leaseCall(request, clock, where);
  return parseLeaseReply(await runScript(commands, keys, args));
}

export interface LeaseBatcherOptions {
  readonly clock: 'store' | 'client';
  /** EVALSHA and EVAL of LEASE_SCRIPT in the store's client. */
  readonly commands: ScriptCommands;
  /** Names the store in errors, e.g. 'redisStore.lease'. */
  readonly where: string;
  /** Most operations one call carries. @default 64 */
  readonly maxBatch?: number;
  /** The operations that may share a call (on a Cluster: one hash tag); undefined for one that travels alone. */
  readonly group?: (key: string) => string | undefined;
  /** Calls `flush` once the operations issued together have arrived (Node: `process.nextTick`). */
  readonly defer: (flush: () => void) => void;
}

interface LeaseBatch {
  readonly call: LeaseCallArguments;
  readonly settle: Array<{ resolve: (result: LeaseResult) => void; reject: (error: unknown) => void }>;
}

/**
 * Coalesces the lease operations issued together (until `defer` calls back: in the Redis store, one turn of the
 * event loop) into one call of LEASE_SCRIPT: one round trip, one command and one TIME for many acquires and
 * releases. Each operation still runs atomically and in the order it was issued, each caller gets its own result
 * (or, when the call fails, the call's error: its limiter's failure policy then decides), and nothing waits on a
 * timer. A malformed request fails alone, before joining a call.
 */
export class LeaseBatcher {
  private readonly maxBatch: number;
  private readonly open = new Map<string | undefined, LeaseBatch>();
  private scheduled = false;

  constructor(private readonly options: LeaseBatcherOptions) {
    this.maxBatch = options.maxBatch ?? 64;
  }

  lease(request: LeaseRequest): Promise<LeaseResult> {
    const { group, clock, where } = this.options;
    let id: string | undefined;
    if (group !== undefined) {
      id = group(request?.key);
      if (id === undefined) return runLease(this.options.commands, request, clock, where);
    }
    let batch = this.open.get(id);
    if (batch === undefined) {
      batch = { call: { keys: [], args: [] }, settle: [] };
      this.open.set(id, batch);
    }
    try {
      appendLease(batch.call, request, clock, where);
    } catch (error) {
      if (batch.settle.length === 0) this.open.delete(id);
      return Promise.reject(error);
    }
    const joined = batch;
    const promise = new Promise<LeaseResult>((resolve, reject) => joined.settle.push({ resolve, reject }));
    if (joined.settle.length >= this.maxBatch) {
      this.open.delete(id);
      this.send(joined);
    } else if (!this.scheduled) {
      this.scheduled = true;
      this.options.defer(this.flush);
    }
    return promise;
  }

  private readonly flush = (): void => {
    this.scheduled = false;
    const batches = [...this.open.values()];
    this.open.clear();
    for (const batch of batches) this.send(batch);
  };

  private send(batch: LeaseBatch): void {
    runScript(this.options.commands, batch.call.keys, batch.call.args).then(
      (reply) => {
        let results: LeaseResult[];
        try {
          results = parseLeaseReplies(reply, batch.settle.length);
        } catch (error) {
          for (const { reject } of batch.settle) reject(error);
          return;
        }
        batch.settle.forEach(({ resolve }, i) => resolve(results[i]!));
      },
      (error: unknown) => {
        for (const { reject } of batch.settle) reject(error);
      },
    );
  }
}
