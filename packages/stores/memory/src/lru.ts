/**
 * The store's bounded map: lru-cache underneath, used so that a hit allocates nothing and rarely writes.
 *
 * - lru-cache's `get`/`peek`/`set` take an options object defaulting to `{}`, which allocates on every call; one
 *   shared options object per operation avoids that (lru-cache only writes `status` on it, which stays undefined
 *   while no diagnostics channel subscribes).
 * - Recency is kept lazily: a hit is a `peek`, and becomes a recency-updating `get` only when more than `slack`
 *   (maxKeys / 8) entries were moved to the front (inserted, or moved by such a `get`) since this one was, so a
 *   busy identity does not rewrite its scattered list neighbours on every decision. Only moves push an entry
 *   toward eviction, so they are what is counted: with no new identities arriving, nothing moves at all.
 *   The bound this keeps: an entry is evicted only after at least maxKeys − 1 − slack other entries were used
 *   more recently than its last use (exact LRU: maxKeys − 1). Below 8 keys it is exact.
 */
import { LRUCache } from 'lru-cache';

export interface LruEntry {
  /** The key the entry is held under; set by `set`. */
  key: string;
  /** The move count when lru-cache last put the entry at the front; maintained by the Lru. */
  movedAt: number;
}

const GET_OPTIONS = {};
const PEEK_OPTIONS = {};
const SET_OPTIONS = {};

export class Lru<E extends LruEntry> {
  private readonly cache: LRUCache<string, E>;
  /**
   * Entries put at the front of lru-cache's list so far (sets, and gets that moved one). An entry with k moves
   * after its own is at most k places from the front, and lru-cache evicts from place maxKeys.
   */
  private moves = 0;
  private readonly slack: number;

  /** `released` is told of every entry the cache lets go: evicted, replaced by `set`, deleted or cleared. */
  constructor(max: number, released?: (entry: E) => void) {
    this.cache = new LRUCache<string, E>(released === undefined ? { max } : { max, dispose: released });
    this.slack = Math.floor(max / 8);
  }

  get size(): number {
    return this.cache.size;
  }

  /** The entry, counted as used now (moved to the front unless fewer than `slack` entries were moved there since it). */
  get(key: string): E | undefined {
    const entry = this.cache.peek(key, PEEK_OPTIONS);
    if (entry !== undefined && this.moves - entry.movedAt > this.slack) {
      this.cache.get(key, GET_OPTIONS);
      entry.movedAt = ++this.moves;
    }
    return entry;
  }

  /** Counts an entry already in hand (found by its key earlier) as used now, as `get` would. */
  touch(entry: E): void {
    if (this.moves - entry.movedAt > this.slack) {
      this.cache.get(entry.key, GET_OPTIONS);
      entry.movedAt = ++this.moves;
    }
  }

  /** The entry, recency untouched. */
  peek(key: string): E | undefined {
    return this.cache.peek(key, PEEK_OPTIONS);
  }

  /** Holds `entry` under `key` as the most recently used, replacing any entry there; evicts the oldest when full. */
  set(key: string, entry: E): void {
    entry.key = key;
    entry.movedAt = ++this.moves;
    this.cache.set(key, entry, SET_OPTIONS);
  }

  delete(key: string): boolean {
    return this.cache.delete(key);
  }

  clear(): void {
    this.cache.clear();
  }

  /** Entries from the most recently used. Deleting the entry just yielded is safe. */
  *newestFirst(): Generator<E> {
    for (const entry of [...this.cache.values()]) yield entry;
  }

  /** Up to `count` entries from the least recently used, collected before any is deleted. */
  oldest(count: number): E[] {
    const entries: E[] = [];
    for (const entry of this.cache.rvalues()) {
      if (entries.length >= count) break;
      if (entry !== undefined) entries.push(entry);
    }
    return entries;
  }
}
