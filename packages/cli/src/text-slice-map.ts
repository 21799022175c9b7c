/**
 * A hash map from a stretch of a larger string (`text` from `start` to `end`) to a number, looked up without
 * cutting the stretch out: no string is made, hashed by V8 and thrown away per lookup. `sluice tune` looks up one
 * identity per log line in the chunk's text this way; only a miss makes a string (the key kept). Open
 * addressing with linear probing over a power-of-two table kept at most half full.
 */

/** `get`'s answer when the key is not in the map (values themselves may be -1). */
export const ABSENT = -2;

export class TextSliceMap {
  size = 0;
  private keys: Array<string | undefined>;
  private hashes: Int32Array;
  private values: Int32Array;
  private mask: number;

  constructor(capacity = 1 << 10) {
    this.keys = new Array<string | undefined>(capacity).fill(undefined);
    this.hashes = new Int32Array(capacity);
    this.values = new Int32Array(capacity);
    this.mask = capacity - 1;
  }

  /** The value of key `text.slice(start, end)`, or `ABSENT`. */
  get(text: string, start: number, end: number): number {
    const hash = hashOf(text, start, end);
    const keys = this.keys;
    const length = end - start;
    for (let i = hash & this.mask; ; i = (i + 1) & this.mask) {
      const key = keys[i];
      if (key === undefined) return ABSENT;
      if (this.hashes[i] === hash && key.length === length && text.startsWith(key, start)) return this.values[i]!;
    }
  }

  /** Adds `key` (not in the map yet), which the map keeps: pass a string that shares no memory with a large one. */
  set(key: string, value: number): void {
    if ((this.size + 1) * 2 > this.keys.length) this.resize(this.keys.length * 2);
    this.insert(key, hashOf(key, 0, key.length), value);
    this.size++;
  }

  clear(): void {
    this.keys.fill(undefined);
    this.size = 0;
  }

  private insert(key: string, hash: number, value: number): void {
    let i = hash & this.mask;
    while (this.keys[i] !== undefined) i = (i + 1) & this.mask;
    this.keys[i] = key;
    this.hashes[i] = hash;
    this.values[i] = value;
  }

  private resize(capacity: number): void {
    const { keys, hashes, values } = this;
    this.keys = new Array<string | undefined>(capacity).fill(undefined);
    this.hashes = new Int32Array(capacity);
    this.values = new Int32Array(capacity);
    this.mask = capacity - 1;
    for (let i = 0; i < keys.length; i++) if (keys[i] !== undefined) this.insert(keys[i]!, hashes[i]!, values[i]!);
  }
}

/** FNV-1a over the UTF-16 code units. */
function hashOf(text: string, start: number, end: number): number {
  let hash = 0x811c9dc5;
  for (let i = start; i < end; i++) hash = Math.imul(hash ^ text.charCodeAt(i), 0x01000193);
  return hash;
}
