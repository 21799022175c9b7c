/**
 * A bounded, nearly least-recently-used map whose recency list runs through the entries themselves (intrusive
 * links): a hit costs one Map lookup and allocates nothing. Replaces lru-cache on the hot path: its get() builds
 * an options object per call and walks TTL and fetch machinery this store never uses (expiry lives in the states).
 *
 * Recency is kept lazily: a hit moves its entry to the newest end only if more than `slack` (max / 8) operations
 * passed since it was last moved, so a busy identity does not rewrite its list neighbours (scattered memory) on
 * every decision. The bound it keeps: an entry is evicted only after at least max - 1 - slack other entries were
 * used more recently than its last use (exact LRU: max - 1). Below 8 entries it is exact.
 */
export interface LruEntry {
  /** The key the entry is held under; set by `set`. */
  key: string;
  /** Toward the most recently used end. */
  newer: LruEntry | undefined;
  /** Toward the least recently used end. */
  older: LruEntry | undefined;
  /** The operation count when the entry was last moved to the newest end; maintained by the Lru. */
  movedAt: number;
}

export class Lru<E extends LruEntry> {
  private readonly map = new Map<string, E>();
  /** Most recently used. */
  private newest: E | undefined;
  /** Least recently used: evicted first. */
  private oldest: E | undefined;
  /** Operations (get and set) so far. */
  private ops = 0;
  private readonly slack: number;

  constructor(private readonly max: number) {
    this.slack = Math.floor(max / 8);
  }

  get size(): number {
    return this.map.size;
  }

  /** The entry, counted as used now (moved to the newest end unless it moved within the last `slack` operations). */
  get(key: string): E | undefined {
    const ops = ++this.ops;
    const entry = this.map.get(key);
    if (entry !== undefined && ops - entry.movedAt > this.slack && entry !== this.newest) {
      this.unlink(entry);
      this.pushNewest(entry);
    }
    return entry;
  }

  /** The entry, recency untouched. */
  peek(key: string): E | undefined {
    return this.map.get(key);
  }

  /** Holds `entry` under `key` as the most recently used, replacing any entry there; evicts the oldest when full. */
  set(key: string, entry: E): void {
    const held = this.map.get(key);
    if (held !== undefined) {
      this.unlink(held);
    } else if (this.map.size >= this.max) {
      const victim = this.oldest!;
      this.unlink(victim);
      this.map.delete(victim.key);
    }
    ++this.ops;
    entry.key = key;
    this.map.set(key, entry);
    this.pushNewest(entry);
  }

  delete(key: string): boolean {
    const held = this.map.get(key);
    if (held === undefined) return false;
    this.unlink(held);
    this.map.delete(key);
    return true;
  }

  clear(): void {
    this.map.clear();
    this.newest = undefined;
    this.oldest = undefined;
  }

  /** Entries from the most recently used. Deleting the entry just yielded is safe. */
  *newestFirst(): Generator<E> {
    for (let entry = this.newest; entry !== undefined; ) {
      const older = entry.older as E | undefined;
      yield entry;
      entry = older;
    }
  }

  /** Entries from the least recently used. Deleting the entry just yielded is safe. */
  *oldestFirst(): Generator<E> {
    for (let entry = this.oldest; entry !== undefined; ) {
      const newer = entry.newer as E | undefined;
      yield entry;
      entry = newer;
    }
  }

  private unlink(entry: E): void {
    const { newer, older } = entry;
    if (newer === undefined) this.newest = older as E | undefined;
    else newer.older = older;
    if (older === undefined) this.oldest = newer as E | undefined;
    else older.newer = newer;
    entry.newer = undefined;
    entry.older = undefined;
  }

  private pushNewest(entry: E): void {
    const newest = this.newest;
    entry.movedAt = this.ops;
    entry.older = newest;
    if (newest === undefined) this.oldest = entry;
    else newest.newer = entry;
    this.newest = entry;
  }
}
