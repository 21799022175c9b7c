import {
  SluiceError,
  evaluate,
  type LimitRequest,
  type LimitResult,
  type State,
  type StoreCapabilities,
  type SyncStore,
} from '@sluice/core';
import { LRUCache } from 'lru-cache';

export interface MemoryStoreOptions {
  /**
   * Most identities (per limiter) kept at once. When full, the least recently used identity is forgotten, which
   * errs toward admitting it again; size this above the identities active within your longest window.
   * Memory is bounded by it whatever the traffic: about 200 to 300 bytes per identity for the counter algorithms.
   * @default 100_000
   */
  maxKeys?: number;
}

/** One identity's states, one slot per rule id; a handful of rules at most, so a linear scan beats a map. */
interface Entry {
  ids: string[];
  states: State[];
  expiresAt: number[];
}

const SWEEP_EVERY = 1024;
const SWEEP_BATCH = 64;

/**
 * Bounded in-memory store: state lives in an LRU keyed by limiter and identity. Synchronous, so limiters over it
 * get `limitSync`. Expiry follows the limiter's clock (fake clocks work): expired state is dropped when read,
 * and an incremental sweep from the least-recently-used end runs every 1024 writes.
 * @example createLimiter({ store: memoryStore({ maxKeys: 50_000 }), rules: fixedWindow({ limit: 10, window: '1s' }) })
 */
export function memoryStore(options: MemoryStoreOptions = {}): MemoryStore {
  return new MemoryStore(options);
}

export class MemoryStore implements SyncStore {
  readonly capabilities: StoreCapabilities & { readonly synchronous: true } = {
    synchronous: true,
    clock: 'client',
    operations: ['limit', 'reset'],
  };
  private readonly cache: LRUCache<string, Entry>;
  private writes = 0;

  constructor(options: MemoryStoreOptions = {}) {
    if (typeof options !== 'object' || options === null) {
      throw new SluiceError('INVALID_OPTION', 'memoryStore: options must be an object');
    }
    for (const key of Object.keys(options)) {
      if (key !== 'maxKeys') {
        throw new SluiceError('UNKNOWN_OPTION', `memoryStore: unknown option ${JSON.stringify(key)}; accepted options are maxKeys`);
      }
    }
    const maxKeys = options.maxKeys ?? 100_000;
    if (!Number.isSafeInteger(maxKeys) || maxKeys < 1) {
      throw new SluiceError('INVALID_OPTION', `memoryStore: maxKeys must be a positive integer, got ${String(maxKeys)}`);
    }
    this.cache = new LRUCache<string, Entry>({ max: maxKeys });
  }

  /** Identities currently held (expired ones included until they are swept or evicted). */
  get size(): number {
    return this.cache.size;
  }

  limit(request: LimitRequest): LimitResult {
    const { key, rules, now } = request;
    const entry = this.cache.get(key);
    const states: Array<State | undefined> = new Array(rules.length);
    for (let i = 0; i < rules.length; i++) states[i] = entry === undefined ? undefined : read(entry, rules[i]!.id, now);
    const evaluation = evaluate(rules, states, now, request.cost, request.mode);
    if (evaluation.writes !== undefined) {
      const target = entry ?? { ids: [], states: [], expiresAt: [] };
      for (let i = 0; i < rules.length; i++) {
        const write = evaluation.writes[i]!;
        put(target, rules[i]!.id, write.state, now + write.ttlMs);
      }
      if (entry === undefined) this.cache.set(key, target);
      if (++this.writes % SWEEP_EVERY === 0) this.sweep(now);
    }
    return { now, outcomes: evaluation.outcomes };
  }

  reset(key: string, ruleIds: readonly string[]): void {
    const entry = this.cache.get(key);
    if (entry === undefined) return;
    for (const id of ruleIds) {
      const at = entry.ids.indexOf(id);
      if (at >= 0) {
        entry.ids.splice(at, 1);
        entry.states.splice(at, 1);
        entry.expiresAt.splice(at, 1);
      }
    }
    if (entry.ids.length === 0) this.cache.delete(key);
  }

  /** Drops every identity whose states have all expired by `now`. O(size); the hot path never calls it. */
  purgeExpired(now: number): number {
    let dropped = 0;
    for (const [key, entry] of this.cache.entries()) {
      if (isExpired(entry, now)) {
        this.cache.delete(key);
        dropped++;
      }
    }
    return dropped;
  }

  clear(): void {
    this.cache.clear();
  }

  private sweep(now: number): void {
    let seen = 0;
    for (const key of this.cache.rkeys()) {
      if (++seen > SWEEP_BATCH) break;
      const entry = this.cache.peek(key);
      if (entry !== undefined && isExpired(entry, now)) this.cache.delete(key);
    }
  }
}

function read(entry: Entry, id: string, now: number): State | undefined {
  const at = entry.ids.indexOf(id);
  if (at < 0 || entry.expiresAt[at]! <= now) return undefined;
  return entry.states[at];
}

function put(entry: Entry, id: string, state: State, expiresAt: number): void {
  const at = entry.ids.indexOf(id);
  if (at >= 0) {
    entry.states[at] = state;
    entry.expiresAt[at] = expiresAt;
  } else {
    entry.ids.push(id);
    entry.states.push(state);
    entry.expiresAt.push(expiresAt);
  }
}

function isExpired(entry: Entry, now: number): boolean {
  for (const at of entry.expiresAt) if (at > now) return false;
  return true;
}
