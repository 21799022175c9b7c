/**
 * The store's bounded map: lru-cache underneath, used so that a hit allocates nothing and rarely writes.
 *
 * - lru-cache's `get`/`peek`/`set` take an options object defaulting to `{}`, which allocates on every call; one
 *   shared options object per operation avoids that (lru-cache only writes `status` on it, which stays undefined
 *   while no diagnostics channel subscribes).
 * - Recency is kept lazily: a hit is a `peek`, and becomes a recency-updating `get` only when more than `slack`
 *   (maxKeys / 8) operations passed since the entry was last moved, so a busy identity does not rewrite its
 *   scattered list neighbours on every decision. The bound this keeps: an entry is evicted only after at least
 *   maxKeys − 1 − slack other entries were used more recently than its last use (exact LRU: maxKeys − 1).
 *   Below 8 keys it is exact.
 */
import { LRUCache } from 'lru-cache';

export interface LruEntry {
  /** The key the entry is held under; set by `set`. */
  key: string;
  /** The operation count when lru-cache last counted the entry as used; maintained by the Lru. */
  movedAt: number;
}

const GET_OPTIONS = {};
const PEEK_OPTIONS = {};
const SET_OPTIONS = {};

export class Lru<E extends LruEntry> {
  private readonly cache: LRUCache<string, E>;
  /** Operations (get and set) so far. */
  private ops = 0;
  private readonly slack: number;

  constructor(max: number) {
    this.cache = new LRUCache<string, E>({ max });
    this.slack = Math.floor(max / 8);
  }

  get size(): number {
    return this.cache.size;
  }

  /** The entry, counted as used now (lru-cache's recency is updated unless it was within the last `slack` operations). */
  get(key: string): E | undefined {
    const ops = ++this.ops;
    const entry = this.cache.peek(key, PEEK_OPTIONS);
    if (entry !== undefined && ops - entry.movedAt > this.slack) {
      this.cache.get(key, GET_OPTIONS);
      entry.movedAt = ops;
    }
    return entry;
  }

  /** The entry, recency untouched. */
  peek(key: string): E | undefined {
    return this.cache.peek(key, PEEK_OPTIONS);
  }

  /** Holds `entry` under `key` as the most recently used, replacing any entry there; evicts the oldest when full. */
  set(key: string, entry: E): void {
    entry.key = key;
    entry.movedAt = ++this.ops;
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
