/**
 * A bounded least-recently-used map whose recency list runs through the entries themselves (intrusive links),
 * so a hit costs one Map lookup and a few pointer writes, and allocates nothing. Replaces lru-cache on the hot
 * path: its get() builds an options object per call and walks its TTL and fetch machinery, which this store
 * never uses (expiry lives in the states, on the limiter's clock).
 */
export interface LruEntry {
  /** The key the entry is held under; set by `set`. */
  key: string;
  /** Toward the most recently used end. */
  newer: LruEntry | undefined;
  /** Toward the least recently used end. */
  older: LruEntry | undefined;
}

export class Lru<E extends LruEntry> {
  private readonly map = new Map<string, E>();
  /** Most recently used. */
  private newest: E | undefined;
  /** Least recently used: evicted first. */
  private oldest: E | undefined;

  constructor(private readonly max: number) {}

  get size(): number {
    return this.map.size;
  }

  /** The entry, made the most recently used. */
  get(key: string): E | undefined {
    const entry = this.map.get(key);
    if (entry !== undefined && entry !== this.newest) {
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
    entry.older = newest;
    if (newest === undefined) this.oldest = entry;
    else newest.newer = entry;
    this.newest = entry;
  }
}
