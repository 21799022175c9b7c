/**
 * Concurrency leases in one script call (core's `evaluateLease()`, leases.ts), for `store.lease(request)` of the
 * Redis-protocol stores. src/lua/lease.lua, assembled and digested at build time like the limit script.
 *
 * A second script rather than a mode of the limit driver: a lease record is a sorted set, not the string state
 * the driver MGETs and SETs; a lease call is one operation on one key, never batched with decisions; and its
 * reply is its own. Kept apart, the limit script's hot path (and its Redis Function, and its differential tests)
 * is untouched by it, and the lease script stays a page of Lua that reads like evaluateLease.
 *
 * KEYS[1]: `${request.key}:lease` (the identity's hash tag is in the key: one slot on a Cluster).
 * ARGV: op, id, limit, ttlMs, and with the client's clock '@' + now; without it the script reads Redis TIME.
 * Reply: now, ok (1/0), held, expiresAt (-1 = none): the LeaseResult, integers only. The record is a sorted set
 * (member = lease id, score = its expiry in ms): expired members (score <= now) are dropped first, then the
 * operation runs, then the key expires with its latest lease, or is deleted when empty. On Redis TIME the expiry
 * is PEXPIREAT latest: the same clock as TIME, exact (PEXPIRE latest - now would count from the server's own
 * command time, which is not the TIME the script read). With the client's clock it is PEXPIRE latest - now +
 * CLIENT_CLOCK_EXPIRY_SLACK_MS, as the limit script's keys. Commands: TIME (store clock), ZREMRANGEBYSCORE,
 * ZSCORE, ZCARD, ZADD or ZREM or ZRANGE, ZRANGE and PEXPIREAT / PEXPIRE (or DEL).
 */
import { SluiceError } from '@sluice/core';
import { LEASE_ID_PATTERN, describeValue, type LeaseRequest, type LeaseResult } from '@sluice/core/store';
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
  if (typeof request !== 'object' || request === null) throw invalid(where, 'a lease request must be an object', request);
  const { key, op, id, limit, ttlMs, now } = request;
  if (typeof id !== 'string' || !LEASE_ID_PATTERN.test(id)) {
    throw invalid(where, "a lease id must be 1 to 64 characters of letters, digits, '_' or '-'", id);
  }
  if (typeof key !== 'string' || key === '') throw invalid(where, 'a lease key must be a non-empty string', key);
  if (!OPS.has(op)) throw invalid(where, "a lease op must be 'acquire', 'release' or 'extend'", op);
  if (!isCount(limit) || (op === 'acquire' && limit < 1)) throw invalid(where, 'a lease limit must be a positive integer', limit);
  if (!isCount(ttlMs) || (op !== 'release' && ttlMs < 1)) throw invalid(where, 'a lease ttlMs must be a positive integer', ttlMs);
  const args = [op, id, String(limit), String(ttlMs)];
  if (clock === 'client') {
    if (!isCount(now)) throw invalid(where, 'a lease request needs now, epoch ms, a non-negative integer', now);
    args.push(`@${now}`);
  }
  return { keys: [`${key}:lease`], args };
}

/** The script's reply as a LeaseResult; anything but four integers is a STORE_ERROR. */
export function parseLeaseReply(reply: unknown): LeaseResult {
  if (!Array.isArray(reply) || reply.length !== 4) {
    throw new SluiceError('STORE_ERROR', `the lease script answered ${Array.isArray(reply) ? `${reply.length} values` : typeof reply}, expected 4 integers`);
  }
  return { now: integer(reply[0]), ok: integer(reply[1]) === 1, held: integer(reply[2]), expiresAt: integer(reply[3]) };
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
export async function runLease(commands: ScriptCommands, request: LeaseRequest, clock: 'store' | 'client', where: string): Promise<LeaseResult> {
  const { keys, args } = leaseCall(request, clock, where);
  return parseLeaseReply(await runScript(commands, keys, args));
}
