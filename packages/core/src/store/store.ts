/**
 * The Store contract: everything a storage backend implements. Documented as a table in core's README.
 *
 * A store executes one request atomically for one identity: every rule of the request is read, stepped and
 * written as one indivisible action (the JS event loop for memory, a write transaction for SQLite, one Lua
 * script for Redis and Upstash). A remote store answers in one round trip, compound rules included.
 *
 * Keys: the limiter passes a base key `prefix:limiter:{identity}`; the store adds `:ruleId` per rule (or keeps
 * one record per base key). The braces are a Redis Cluster hash tag: all keys of one identity share one slot.
 *
 * Operations: every request carries an `operation`. `consume`, `peek` and `refund` are required of every store; `take` and
 * `reserve` (defined in core's `evaluate()`) are optional. `capabilities.operations` is checked by the limiter:
 * `createLimiter` refuses a store that does not list `limit` and `reset` (INVALID_OPTION), and every `take` or
 * `reserve` is refused with UNSUPPORTED_OPERATION, before the store is called, unless the store lists that operation.
 *
 * `FastPathStore` and `MemoryFirstStore` (below) are optional seams for in-process and memory-first stores, not part of
 * the contract.
 */
import type { Operation, StepOperation, State } from '../algorithms/algorithm.js';
import type { SluiceError } from '../shared/errors.js';
import type { LeaseRequest, LeaseResult } from './leases.js';
import type { ResolvedRule, RuleOutcome } from '../algorithms/rules.js';

/**
 * `limit` and `reset` are required; `take` and `reserve` name the optional operations of `limit`; `lease` the optional
 * concurrency operations (`store.lease(request)`: acquire, release, extend; see store/leases.ts).
 */
export type StoreOperation = 'limit' | 'reset' | 'take' | 'reserve' | 'lease';

export interface StoreCapabilities {
  /** True when every method returns its result directly, never a promise. Enables `limitSync`. */
  readonly synchronous: boolean;
  /** `client`: the store uses `request.now`. `store`: it reads its own clock (Redis `TIME`) and ignores it. */
  readonly clock: 'client' | 'store';
  /** The operations implemented. `limit` and `reset` are required; `take` and `reserve` when `limit` runs those operations. */
  readonly operations: readonly StoreOperation[];
  /**
   * True for an asynchronous store that answers many requests from process memory (a local tier such as
   * `@sluice/tiered`): the limiter then keeps recent identities' keys, as it does for synchronous stores, so a
   * local answer does not pay for building and hashing the key string. @default false
   */
  readonly memoryFirst?: boolean;
  /**
   * True for a store that answers its own remote store's failures, within a deadline shorter than the limiter's (a
   * local tier such as `@sluice/tiered`: on its local share where that is safe, otherwise with a degraded refusal).
   * A limiter over it changes two defaults: `onStoreError` is `'deny'` (an answer the store could not give in time
   * was not proven safe, so it must not admit) and `circuitBreaker` is `false` (the store has its own breaker; the
   * limiter's would also stop the answers it gives from memory). Options given explicitly win. @default false
   */
  readonly answersFailures?: boolean;
}

export interface LimitRequest {
  /** `prefix:limiter:{identity}`. */
  readonly key: string;
  /** One or more rules, run all-or-nothing. */
  readonly rules: readonly ResolvedRule[];
  /** Non-negative integer; 0 reads without writing. */
  readonly cost: number;
  readonly operation: Operation;
  /** The limiter's clock, epoch ms. Used by `clock: 'client'` stores. */
  readonly now: number;
  /** `reserve` only: the longest wait, ms, a booking may start after `now`; a non-negative integer. */
  readonly maxWaitMs?: number;
}

export interface LimitResult {
  /** The time the decision was made at (the store's own for `clock: 'store'`), epoch ms. */
  readonly now: number;
  /** One outcome per rule, in request order (for `take` and `reserve`, each carries `granted` or `startAt`). */
  readonly outcomes: readonly RuleOutcome[];
  /**
   * Set by a store that answered without its shared state (a tier deciding on its local share while its remote
   * store is down): why. The limiter marks the decision `degraded` with this error, as it does a failure
   * policy's answer.
   */
  readonly error?: SluiceError;
}

export interface Store {
  readonly capabilities: StoreCapabilities;
  /** Runs the rules of one request atomically; see `evaluate()` for the reference semantics. */
  limit(request: LimitRequest): LimitResult | Promise<LimitResult>;
  /** Forgets the state of the given rules for one base key. */
  reset(key: string, ruleIds: readonly string[]): void | Promise<void>;
  /**
   * Concurrency leases for one base key (acquire, release, extend), atomically, as `evaluateLease()` defines them;
   * kept under `${key}:lease` with the expiry of its latest lease. Required when `operations` lists `lease`.
   */
  lease?(request: LeaseRequest): LeaseResult | Promise<LeaseResult>;
  /** Releases what the store opened itself (never the client the user passed in). */
  close?(): void | Promise<void>;
}

/** A store that answers synchronously (memory, SQLite). Limiters over it get `limitSync`. */
export interface SyncStore extends Store {
  readonly capabilities: StoreCapabilities & { readonly synchronous: true };
  limit(request: LimitRequest): LimitResult;
  reset(key: string, ruleIds: readonly string[]): void;
}

/** Where a FastPathStore writes its answer: the fields of a `RuleOutcome` that vary per call. */
export interface RuleAnswer {
  allowed: boolean;
  remaining: number;
  resetAt: number;
  /** Earliest time the same cost passes; `now` when allowed, -1 (NEVER) when never. */
  retryAt: number;
}

/**
 * Not part of the contract: an optional seam for in-process stores that want the limiter's allocation-free
 * path. A synchronous, `clock: 'client'` store with a `bindFastPath` method is asked once per limiter for a
 * `FastPath` over that limiter's keys, and gets every single-rule `consume`, `peek` and `refund` request whose
 * rule is not staggered (cost 0 arrives as `peek`) through it instead of `limit`; everything else still goes to
 * `limit`. The limiter runs it under the same failure policy and shapes its answer like any other (see core's
 * README, "How a decision flows"). The memory store implements it; `test/fast-path.test.ts` there proves it
 * equal to the general path.
 */
export interface FastPathStore extends SyncStore {
  /** A fast path for requests whose keys are `keyPrefix + identityKey(identity) + '}'` (one limiter's keys). */
  bindFastPath(keyPrefix: string): FastPath;
}

export interface FastPath {
  /**
   * Exactly `limit(request)` for this request, state and writes included, writing the outcome's varying fields
   * into `out` instead of returning a result; a failure throws as `limit` would. The request also carries the
   * raw identity, so a store can find the identity's state without building its key: `request.key` is computed
   * on first read.
   */
  limitOne(request: FastRequest, out: RuleAnswer): void;
}

/**
 * Not part of the contract: the same seam for an asynchronous store that answers most requests from process memory
 * (`memoryFirst`, a local tier). A `memoryFirst` store with a `bindMemoryPath` method is asked once per limiter
 * for a `MemoryPath` over that limiter's keys, and gets the requests a FastPathStore's `limitOne` would get. An
 * answer it gives from memory comes back without a promise or a result object; any other comes back as `limit`
 * would return it. `@sluice/tiered` implements it; `test/memory-path.test.ts` here and there prove it equal to `limit`.
 */
export interface MemoryFirstStore extends Store {
  /** A path for requests whose keys are `keyPrefix + identityKey(identity) + '}'` (one limiter's keys). */
  bindMemoryPath(keyPrefix: string): MemoryPath;
}

export interface MemoryPath {
  /**
   * Exactly `limit(request)` for this request, state and counters included. An answer given from process memory,
   * not degraded, is written into `out` (its time included) and `undefined` returned; any other is returned as
   * `limit` returns it (a result or a promise of one). A failure throws or rejects as `limit` would.
   */
  limitOne(request: FastRequest, out: MemoryAnswer): LimitResult | Promise<LimitResult> | undefined;
}

/** Where a MemoryPath writes an answer from memory: a `RuleAnswer` and the time it was given at (`LimitResult.now`). */
export interface MemoryAnswer extends RuleAnswer {
  now: number;
}

/** A single-rule step-operation request on a fast path: a `LimitRequest` that also carries the identity it is for. */
export interface FastRequest extends LimitRequest {
  readonly operation: StepOperation;
  /** A non-empty string; `key` is `keyPrefix + identityKey(identity) + '}'`. */
  readonly identity: string;
}

/**
 * How long, on its own clock, an executor keeps a record past its expiry before a background sweep may remove it.
 * Reads ignore a record from its expiry on (core's steps answer an expired state exactly like no state), so the
 * grace only matters to a clock that steps back: by up to this much, every executor still finds the same state.
 * A record is always deleted at once when a write leaves it worth nothing (ttl <= 0).
 */
export const EXPIRY_GRACE_MS = 60_000;

/** A raw persisted record, for stores that keep states as text (SQLite, debugging). */
export function encodeState(state: State): string {
  return state.join(',');
}

export function decodeState(text: string | null | undefined): State | undefined {
  if (text === null || text === undefined || text === '') return undefined;
  const parts = text.split(',');
  const state = new Array<number>(parts.length);
  for (let i = 0; i < parts.length; i++) {
    const value = Number(parts[i]);
    if (!Number.isSafeInteger(value)) return undefined; // corrupt record: start fresh rather than admit NaN
    state[i] = value;
  }
  return state;
}
