/**
 * The tier's entries, one per identity key, bounded by maxKeys: an LRU (lru-cache) whose recency is kept lazily, and
 * for core's memory path one index per limiter key prefix, identity to entry, so that a decision on a held identity
 * is one Map lookup by the string the caller already has (its hash cached in the string), with no key built.
 */
import type { FastRequest, LimitRequest, ResolvedRule } from '@sluice/core/store';
import { LRUCache } from 'lru-cache';
import type { Entry } from './entry.js';
import { leasable } from './rule-windows.js';

/** lru-cache's get and peek default their options to a new `{}` per call; one shared object instead (lru-cache only writes `status` on it, with diagnostics on). */
const GET_OPTIONS = {};
const PEEK_OPTIONS = {};

export class Entries {
  private readonly lru: LRUCache<string, Entry>;
  /**
   * Entries put at the front of the LRU so far. Recency is kept lazily, as the memory store keeps it: a hit moves
   * an entry to the front only when more than `slack` (maxKeys / 8) others were moved there since it was, so a
   * busy identity does not rewrite its list neighbours on every decision. An entry is evicted only after at least
   * maxKeys − 1 − slack others were used more recently (exact below 8 keys).
   */
  private moves = 0;
  private readonly slack: number;
  /** Identity to entry, per limiter key prefix. An index only points into the LRU: an entry leaves it when the LRU lets it go. */
  private readonly indexes = new Map<string, Map<string, Entry>>();
  private readonly signatures = new WeakMap<readonly ResolvedRule[], string>();
  private lastRules: readonly ResolvedRule[] | undefined;
  private lastSignature = '';

  /**
   * @param released told of every entry the LRU lets go (evicted, replaced, deleted, cleared), with lru-cache's reason
   * @param replaced told of an entry whose rules changed, before a new one takes its place
   */
  constructor(
    maxKeys: number,
    released: (entry: Entry, reason: string) => void,
    private readonly replaced: (entry: Entry) => void,
  ) {
    this.lru = new LRUCache<string, Entry>({
      max: maxKeys,
      dispose: (entry, _key, reason) => {
        if (entry.index?.get(entry.identity) === entry) entry.index.delete(entry.identity);
        released(entry, reason);
      },
    });
    this.slack = Math.floor(maxKeys / 8);
  }

  get size(): number {
    return this.lru.size;
  }

  /** The index of one limiter's identities (its keys are `keyPrefix + identityKey(identity) + '}'`). */
  index(keyPrefix: string): Map<string, Entry> {
    let index = this.indexes.get(keyPrefix);
    if (index === undefined) this.indexes.set(keyPrefix, (index = new Map()));
    return index;
  }

  /** The request's entry, as `find` gives it, found by identity in `index` when it is held there. */
  findIndexed(index: Map<string, Entry>, verbatimLength: number, request: FastRequest): Entry {
    const identity = request.identity;
    let entry = index.get(identity);
    if (entry !== undefined && entry.rules === request.rules) {
      this.touch(entry);
      entry.lastSeen = request.now;
      return entry;
    }
    entry = this.find(request);
    // Only an identity its key holds verbatim is indexed (a hashed one's long string would be kept alive).
    if (entry.index === undefined && request.key.length === verbatimLength + identity.length) {
      index.set(identity, entry);
      entry.index = index;
      entry.identity = identity;
    }
    return entry;
  }

  /** The request's entry, made when there is none or when its rules changed (a new set of rules starts local state over). */
  find(request: LimitRequest): Entry {
    const signature = this.signatureOf(request.rules);
    let entry = this.lru.peek(request.key, PEEK_OPTIONS);
    if (entry === undefined) {
      entry = this.add(request, signature);
    } else if (entry.signature !== signature) {
      this.replaced(entry);
      entry = this.add(request, signature);
    } else {
      this.touch(entry);
    }
    entry.rules = request.rules;
    entry.lastSeen = request.now;
    return entry;
  }

  /** The entry under `key`, recency untouched. */
  peek(key: string): Entry | undefined {
    return this.lru.peek(key, PEEK_OPTIONS);
  }

  delete(key: string): void {
    this.lru.delete(key);
  }

  clear(): void {
    this.lru.clear();
  }

  /** From the most recently used (as nearly as the lazy recency keeps it). */
  values(): Generator<Entry> {
    return this.lru.values();
  }

  /** From the least recently used (as nearly as the lazy recency keeps it). */
  rvalues(): Generator<Entry | undefined> {
    return this.lru.rvalues();
  }

  private add(request: LimitRequest, signature: string): Entry {
    const fresh: Entry = {
      key: request.key,
      signature,
      leasable: leasable(request.rules),
      rules: request.rules,
      lastSeen: 0,
      denial: undefined,
      lease: undefined,
      fetching: undefined,
      waiting: 0,
      counts: undefined,
      movedAt: ++this.moves,
      index: undefined,
      identity: '',
    };
    this.lru.set(request.key, fresh);
    return fresh;
  }

  /** Counts an entry as used now: moved to the front of the LRU unless fewer than `slack` entries were moved there since it. */
  private touch(entry: Entry): void {
    if (this.moves - entry.movedAt > this.slack) {
      this.lru.get(entry.key, GET_OPTIONS);
      entry.movedAt = ++this.moves;
    }
  }

  private signatureOf(rules: readonly ResolvedRule[]): string {
    if (rules === this.lastRules) return this.lastSignature;
    let signature = this.signatures.get(rules);
    if (signature === undefined) {
      signature = rules.map((r) => `${r.id}:${r.algorithm}:${r.limit}:${JSON.stringify(r.params)}`).join('|');
      this.signatures.set(rules, signature);
    }
    this.lastRules = rules;
    this.lastSignature = signature;
    return signature;
  }
}
