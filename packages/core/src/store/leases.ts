/**
 * Concurrency leases (the "Concurrent requests limiter" of the article 'Scaling your API with rate limiters'): at
 * most `limit` leases held at once per key. The reference semantics every executor follows (memory, and the stores
 * that announce the `lease` operation), as the article's Redis version does with a sorted set: the held leases are
 * (id, expiresAt) pairs; expired ones are dropped first; an acquire adds one if fewer than `limit` are held; a
 * release removes exactly its own id.
 *
 * - acquire(id, limit, ttlMs): granted when fewer than `limit` live leases are held (an id already held is
 *   renewed, not counted twice); `expiresAt` is the new lease's expiry, or, when refused, the earliest expiry
 *   among the held ones (a slot frees by then at the latest, if nobody releases).
 * - release(id): removes `id` if it is held and live; `ok` says whether it was. Idempotent, and a release after
 *   the lease expired frees nothing: a slot taken since by someone else is never freed by it.
 * - extend(id, ttlMs): a live lease's expiry becomes now + ttlMs; an expired or unknown one is not revived.
 * The record's time to live is the latest expiry it holds (it expires by itself when every lease has).
 */

import { describe } from '../shared/describe.js';
import { SluiceError } from '../shared/errors.js';

/** Ids: what `createConcurrencyLimiter` makes (random), and what a store may be asked to keep. */
export const LEASE_ID_PATTERN = /^[A-Za-z0-9_-]{1,64}$/;

export type LeaseOp = 'acquire' | 'release' | 'extend';

/** The held leases of one key: [id, expiresAt] pairs, in acquisition order. */
export type LeaseEntries = ReadonlyArray<readonly [id: string, expiresAt: number]>;

export interface LeaseRequest {
  /** The limiter's base key `prefix:limiter:{identity}`; a store keeps the leases under `${key}:lease`. */
  readonly key: string;
  readonly op: LeaseOp;
  /** The lease's id: 1 to 64 characters of letters, digits, '_' or '-' (LEASE_ID_PATTERN). */
  readonly id: string;
  /** acquire: the most leases held at once, a positive integer. */
  readonly limit: number;
  /** acquire and extend: the lease's lifetime from now, ms, a positive integer. */
  readonly ttlMs: number;
  /** The limiter's clock, epoch ms (a `clock: 'store'` store uses its own). */
  readonly now: number;
}

export interface LeaseResult {
  /** The time the operation was made at (the store's own for `clock: 'store'`). */
  readonly now: number;
  /** acquire: granted; release: the id was held and is now freed; extend: the lease was live and is extended. */
  readonly ok: boolean;
  /** Live leases held after the operation. */
  readonly held: number;
  /** acquire or extend that succeeded: this lease's expiry. A refused acquire: the earliest expiry held. Otherwise -1. */
  readonly expiresAt: number;
}

export interface LeaseEvaluation {
  readonly result: LeaseResult;
  /** The entries to keep, and for how long (ms from now; at or below 0: delete the record). */
  readonly entries: LeaseEntries;
  readonly ttlMs: number;
}

/** The reference: what every executor must compute from the entries it holds for `request.key`. */
export function evaluateLease(held: LeaseEntries | undefined, request: LeaseRequest, now: number): LeaseEvaluation {
  if (request.op !== 'acquire' && request.op !== 'release' && request.op !== 'extend') {
    throw new SluiceError('INVALID_OPTION', `lease request: op must be 'acquire', 'release' or 'extend', got ${describe(request.op)}`);
  }
  if (request.op === 'acquire' && !(Number.isSafeInteger(request.limit) && request.limit >= 1)) {
    throw new SluiceError('INVALID_OPTION', `lease request: limit must be a positive integer, got ${describe(request.limit)}`);
  }
  const live = (held ?? []).filter(([, expiresAt]) => expiresAt > now);
  const mine = live.findIndex(([id]) => id === request.id);
  let ok = false;
  let expiresAt = -1;
  let entries: Array<readonly [string, number]> = live;
  if (request.op === 'acquire') {
    if (mine >= 0 || live.length < request.limit) {
      ok = true;
      expiresAt = now + request.ttlMs;
      entries =
        mine >= 0 ? live.map((e, i) => (i === mine ? ([e[0], expiresAt] as const) : e)) : [...live, [request.id, expiresAt] as const];
    } else {
      expiresAt = Math.min(...live.map(([, e]) => e));
    }
  } else if (request.op === 'release') {
    if (mine >= 0) {
      ok = true;
      entries = live.filter((_, i) => i !== mine);
    }
  } else if (request.op === 'extend' && mine >= 0) {
    ok = true;
    expiresAt = now + request.ttlMs;
    entries = live.map((e, i) => (i === mine ? ([e[0], expiresAt] as const) : e));
  }
  const latest = entries.length === 0 ? now : Math.max(...entries.map(([, e]) => e));
  return { result: { now, ok, held: entries.length, expiresAt }, entries, ttlMs: latest - now };
}
