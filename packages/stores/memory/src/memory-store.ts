import { SluiceError } from '@sluice/core';
import {
  EXPIRY_GRACE_MS,
  LEASE_ID_PATTERN,
  evaluateLease,
  evaluate,
  newStepScratch,
  stepRuleInto,
  type FastPath,
  type FastPathStore,
  type FastRequest,
  type LeaseEntries,
  type LeaseRequest,
  type LeaseResult,
  type LimitRequest,
  type LimitResult,
  type StepOperation,
  type ResolvedRule,
  type RuleAnswer,
  type RuleOutcome,
  type State,
  type StoreCapabilities,
} from '@sluice/core/store';
import { describeValue as describe, optionNames, rejectUnknownOptions } from '@sluice/core/internal';
import { Lru, type LruEntry } from './lru.js';

export interface MemoryStoreOptions {
  /**
   * Most (limiter, identity) pairs kept at once, across every limiter on this store. When full, a least recently
   * used one is forgotten (never one used more recently than 7/8 of maxKeys others), which errs toward
   * admitting it again; size this above the identities active within
   * your longest window. Memory is bounded by it whatever the traffic: a few hundred bytes per tracked identity
   * for the counter and bucket algorithms (measured by `pnpm bench memory`); lru-cache reserves about 16 bytes
   * per slot up front.
   * At most 10,000,000.
   * @default 100_000
   */
  maxKeys?: number;
}

/**
 * One rule's state for one identity. An identity's slots form a chain (a handful of rules at most, so walking it
 * beats a map); the cache holds the first, which also carries the lazy-recency counter (unused on the others:
 * one shape for every slot). One small object per rule keeps a tracked identity to a few hundred bytes.
 */
interface Slot extends LruEntry {
  readonly id: string;
  state: State;
  expiresAt: number;
  next: Slot | undefined;
}

/** One identity's concurrency leases (`lease()`), held apart from its rule states, bounded by the same maxKeys. */
interface LeaseRecord extends LruEntry {
  entries: LeaseEntries;
  expiresAt: number;
}

/**
 * A plain object literal, not a class with declared fields: ES2022 class fields start as `undefined`, which
 * makes V8 keep `expiresAt` as a generic field and box every epoch-ms double written to it in a new 16-byte
 * heap number, one per decision, hung off a long-lived slot.
 */
function newSlot(id: string, state: State, expiresAt: number): Slot {
  return { key: '', movedAt: 0, id, state, expiresAt, next: undefined };
}

const SWEEP_EVERY = 1024;
const MAX_KEYS_LIMIT = 10_000_000;
const KNOWN = optionNames<MemoryStoreOptions>({ maxKeys: true });
const SWEEP_BATCH = 64;

/**
 * Bounded in-memory store: state lives in an LRU keyed by limiter and identity. Synchronous, so limiters over it
 * get `limitSync`. Expiry follows the limiter's clock (fake clocks work): expired state is ignored when read
 * (it behaves exactly like no state) and removed by an incremental sweep from the least-recently-used end runs every 1024 writes.
 * @example createLimiter({ store: memoryStore({ maxKeys: 50_000 }), rules: fixedWindow({ limit: 10, window: '1s' }) })
 */
export function memoryStore(options: MemoryStoreOptions = {}): MemoryStore {
  return new MemoryStore(options);
}

export class MemoryStore implements FastPathStore {
  readonly capabilities: StoreCapabilities & { readonly synchronous: true } = {
    synchronous: true,
    clock: 'client',
    operations: ['limit', 'reset', 'take', 'reserve', 'lease'],
  };
  private readonly cache: Lru<Slot>;
  /** Concurrency leases, per base key; as bounded as the states (an evicted record frees its slots: size maxKeys above the identities in flight). */
  private readonly leases: Lru<LeaseRecord>;
  /**
   * One index per limiter key prefix, identity to first slot, for the fast path: a decision on a held identity is
   * one Map lookup by the identity string the caller already has (its hash cached in the string), instead of
   * building `prefix:name:{identity}` and hashing that. Only identities kept verbatim in their key are indexed
   * (so the identity can be read back from the key). The indexes only point into the cache: an identity leaves
   * its index when the cache lets its slot go (evicted, replaced, deleted), so they hold at most maxKeys.
   */
  private readonly indexes = new Map<string, Map<string, Slot>>();
  private writes = 0;
  /** Reused by every decision: a step's outcome is copied out of it before the next one runs. */
  private readonly scratch = newStepScratch();
  private readonly answer: RuleAnswer = { allowed: true, remaining: 0, resetAt: 0, retryAt: 0 };

  constructor(options: MemoryStoreOptions = {}) {
    if (typeof options !== 'object' || options === null) {
      throw new SluiceError('INVALID_OPTION', 'memoryStore: options must be an object');
    }
    rejectUnknownOptions(options, KNOWN, 'memoryStore');
    const maxKeys = options.maxKeys ?? 100_000;
    if (typeof maxKeys !== 'number' || !Number.isSafeInteger(maxKeys) || maxKeys < 1 || maxKeys > MAX_KEYS_LIMIT) {
      throw new SluiceError(
        'INVALID_OPTION',
        `memoryStore: maxKeys must be an integer from 1 to ${MAX_KEYS_LIMIT} (memory grows with it: a few hundred bytes per identity), got ${describe(maxKeys)}`,
      );
    }
    this.cache = new Lru<Slot>(maxKeys, (first) => this.unindex(first));
    this.leases = new Lru<LeaseRecord>(maxKeys);
  }

  /** Identities currently held (expired ones included until they are swept or evicted). */
  get size(): number {
    return this.cache.size;
  }

  /**
   * The base keys currently held, most recently used first (as nearly as the Lru keeps recency), then the lease
   * records (`base key:lease`); for inspection and tests, not the hot path.
   */
  keys(): string[] {
    const keys: string[] = [];
    for (const first of this.cache.newestFirst()) keys.push(first.key);
    for (const record of this.leases.newestFirst()) if (record.entries.length > 0) keys.push(record.key);
    return keys;
  }

  limit(request: LimitRequest): LimitResult {
    const { key, rules, now, operation } = request;
    // take and reserve go through evaluate() below; the single-rule fast path serves the step operations.
    if (rules.length === 1 && (operation === 'consume' || operation === 'peek' || operation === 'refund')) {
      const rule = rules[0]!;
      const answer = this.answer;
      this.stepOne(this.cache.get(key), key, rule, request.cost, operation, now, answer);
      const outcome: RuleOutcome = {
        id: rule.id,
        allowed: answer.allowed,
        limit: rule.limit,
        remaining: answer.remaining,
        resetAt: answer.resetAt,
        retryAt: answer.retryAt,
      };
      return { now, outcomes: [outcome] };
    }
    const first = this.cache.get(key);
    const states: Array<State | undefined> = new Array(rules.length);
    for (let i = 0; i < rules.length; i++) states[i] = first === undefined ? undefined : read(first, rules[i]!.id, now);
    const evaluation = evaluate(rules, states, now, request.cost, operation, request.maxWaitMs);
    const writes = evaluation.writes;
    if (writes !== undefined) {
      let head = first;
      const dropped: string[] = [];
      for (let i = 0; i < rules.length; i++) {
        // A state worth nothing (ttl <= 0) is deleted, as every executor does.
        if (writes[i]!.ttlMs > 0) head = put(head, rules[i]!.id, writes[i]!.state, now + writes[i]!.ttlMs);
        else dropped.push(rules[i]!.id);
      }
      if (head !== undefined) this.wrote(key, first, head, now);
      if (dropped.length > 0) this.reset(key, dropped);
    }
    return { now, outcomes: evaluation.outcomes };
  }

  /** Core's fast-path seam (see FastPathStore): requests for one limiter's keys, found by identity. */
  bindFastPath(keyPrefix: string): FastPath {
    if (keyPrefix.indexOf('{') !== keyPrefix.length - 1) {
      throw new SluiceError('INVALID_OPTION', `memoryStore: a fast-path key prefix must end with its only '{', got ${describe(keyPrefix)}`);
    }
    let index = this.indexes.get(keyPrefix);
    if (index === undefined) this.indexes.set(keyPrefix, (index = new Map()));
    const prefixLength = keyPrefix.length;
    return { limitOne: (request, out) => this.limitIndexed(index, prefixLength, request, out) };
  }

  /** The fast path's decision: `limit(request)` for one rule, found through the identity index. */
  private limitIndexed(index: Map<string, Slot>, prefixLength: number, request: FastRequest, out: RuleAnswer): void {
    const identity = request.identity;
    let first = index.get(identity);
    let key: string;
    let verbatim = true;
    if (first !== undefined) {
      this.cache.touch(first);
      key = first.key;
    } else {
      key = request.key;
      first = this.cache.get(key);
      // The key holds the identity verbatim exactly when their lengths agree (a hashed form is longer than any
      // verbatim identity); others (long ones, whose whole string the index would keep alive) are not indexed.
      verbatim = key.length === prefixLength + identity.length + 1;
      if (first !== undefined && verbatim) index.set(identity, first);
    }
    const head = this.stepOne(first, key, request.rules[0]!, request.cost, request.operation, request.now, out);
    if (head !== first && head !== undefined && verbatim) index.set(identity, head);
  }

  /** The cache let go of a first slot: its identity leaves its fast-path index, if that points at this slot. */
  private unindex(first: Slot): void {
    const key = first.key;
    const open = key.indexOf('{');
    const index = this.indexes.get(key.slice(0, open + 1));
    if (index === undefined) return;
    const identity = key.slice(open + 1, -1);
    if (index.get(identity) === first) index.delete(identity);
  }

  /**
   * One rule, one identity: exactly what `evaluate` does for one rule (step; write when consume was allowed or on
   * refund, never for cost 0), with the step written into a reused scratch and the state copied into the slot's
   * own array: no allocation once an identity is tracked. Returns the identity's first slot afterwards.
   */
  private stepOne(
    first: Slot | undefined,
    key: string,
    rule: ResolvedRule,
    cost: number,
    operation: StepOperation,
    now: number,
    out: RuleAnswer,
  ): Slot | undefined {
    let slot = first;
    while (slot !== undefined && slot.id !== rule.id) slot = slot.next;
    const step = this.scratch;
    stepRuleInto(rule, slot !== undefined && slot.expiresAt > now ? slot.state : undefined, now, cost, operation, step);
    let head = first;
    if (cost > 0 && (operation === 'refund' || (operation === 'consume' && step.allowed))) {
      const expiresAt = now + step.ttlMs;
      if (step.ttlMs <= 0) {
        // Worth nothing (a refund back to full): deleted, as every executor does, not kept for a backward clock.
        if (slot !== undefined) head = this.drop(key, [rule.id]);
      } else if (slot !== undefined) {
        overwrite(slot, step.next);
        slot.expiresAt = expiresAt;
        if (++this.writes % SWEEP_EVERY === 0) this.sweep(now);
      } else {
        head = put(first, rule.id, step.next.slice(), expiresAt);
        this.wrote(key, first, head, now);
      }
    }
    out.allowed = step.allowed;
    out.remaining = step.remaining;
    out.resetAt = step.resetAt;
    out.retryAt = step.retryAt;
    return head;
  }

  private wrote(key: string, first: Slot | undefined, head: Slot, now: number): void {
    if (head !== first) this.cache.set(key, head);
    if (++this.writes % SWEEP_EVERY === 0) this.sweep(now);
  }

  reset(key: string, ruleIds: readonly string[]): void {
    this.drop(key, ruleIds);
  }

  /** Concurrency leases for one base key, as core's `evaluateLease()` defines them (acquire, release, extend). */
  lease(request: LeaseRequest): LeaseResult {
    if (typeof request.id !== 'string' || !LEASE_ID_PATTERN.test(request.id)) {
      throw new SluiceError(
        'INVALID_OPTION',
        `memoryStore: a lease id must be 1 to 64 characters of letters, digits, '_' or '-', got ${describe(request.id)}`,
      );
    }
    const key = `${request.key}:lease`;
    const record = this.leases.get(key);
    const held = record !== undefined && record.expiresAt > request.now ? record.entries : undefined;
    const evaluation = evaluateLease(held, request, request.now);
    if (evaluation.ttlMs <= 0) {
      // Nothing held: the record is kept empty and expired rather than deleted (read as no record; the LRU lets it
      // go in time). lru-cache clears its whole arrays, O(maxKeys), when its last entry is deleted, and a lease
      // cache often empties: an identity's only lease released on a quiet server (measured: ~300 µs a request).
      if (record !== undefined) {
        record.entries = evaluation.entries;
        record.expiresAt = request.now;
      }
    } else if (record !== undefined) {
      record.entries = evaluation.entries;
      record.expiresAt = request.now + evaluation.ttlMs;
    } else {
      this.leases.set(key, { key: '', movedAt: 0, entries: evaluation.entries, expiresAt: request.now + evaluation.ttlMs });
    }
    return evaluation.result;
  }

  /** Forgets some rules' states for one key; returns the key's first slot afterwards. */
  private drop(key: string, ruleIds: readonly string[]): Slot | undefined {
    const first = this.cache.get(key);
    if (first === undefined) return undefined;
    let head: Slot | undefined;
    let tail: Slot | undefined;
    for (let slot: Slot | undefined = first; slot !== undefined; slot = slot.next) {
      if (ruleIds.includes(slot.id)) continue;
      const kept = newSlot(slot.id, slot.state, slot.expiresAt);
      if (tail === undefined) head = kept;
      else tail.next = kept;
      tail = kept;
    }
    if (head === undefined) this.cache.delete(key);
    else this.cache.set(key, head);
    return head;
  }

  /** Drops every identity whose states have all expired by `now`, and every expired lease record. O(size); the hot path never calls it. */
  purgeExpired(now: number): number {
    let dropped = 0;
    for (const first of this.cache.newestFirst()) {
      if (isExpired(first, now)) {
        this.cache.delete(first.key);
        dropped++;
      }
    }
    for (const record of this.leases.newestFirst()) {
      if (record.expiresAt <= now) this.leases.delete(record.key);
    }
    return dropped;
  }

  clear(): void {
    this.cache.clear();
    this.leases.clear();
  }

  private sweep(now: number): void {
    // Kept EXPIRY_GRACE_MS past expiry (see core), so that a clock stepping back finds what other executors find.
    const before = now - EXPIRY_GRACE_MS;
    for (const first of this.cache.oldest(SWEEP_BATCH)) {
      if (isExpired(first, before)) this.cache.delete(first.key);
    }
  }
}

function read(first: Slot, id: string, now: number): State | undefined {
  for (let slot: Slot | undefined = first; slot !== undefined; slot = slot.next) {
    if (slot.id === id) return slot.expiresAt > now ? slot.state : undefined;
  }
  return undefined;
}

/** Stores a rule's state in place, or appends a slot for it; returns the (possibly new) first slot. */
function put(first: Slot | undefined, id: string, state: State, expiresAt: number): Slot {
  if (first === undefined) return newSlot(id, state, expiresAt);
  let slot = first;
  while (true) {
    if (slot.id === id) {
      overwrite(slot, state);
      slot.expiresAt = expiresAt;
      return first;
    }
    if (slot.next === undefined) {
      slot.next = newSlot(id, state, expiresAt);
      return first;
    }
    slot = slot.next;
  }
}

/**
 * Copies a same-length state into the slot's own array instead of keeping the step's new one. The slot is
 * long-lived (old generation); pointing it at a fresh array on every decision gets that array promoted and
 * leaves old-generation garbage behind (measured: 25 to 35 bytes promoted per decision, 10 with the copy). The
 * stored array is only ever read by steps, which never keep it.
 */
function overwrite(slot: Slot, state: State): void {
  const own = slot.state as number[];
  if (own === state) return;
  if (own.length !== state.length) {
    slot.state = state.slice();
    return;
  }
  for (let i = 0; i < state.length; i++) own[i] = state[i]!;
}

function isExpired(first: Slot, now: number): boolean {
  for (let slot: Slot | undefined = first; slot !== undefined; slot = slot.next) if (slot.expiresAt > now) return false;
  return true;
}
