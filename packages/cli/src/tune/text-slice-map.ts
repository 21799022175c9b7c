/**
 * A hash map from a stretch of a larger string (`text` from `start` to `end`) to a number, looked up without
 * cutting the stretch out: no string is made, hashed by V8 and thrown away per lookup. `sluice tune` looks up one
 * identity per log line in the chunk's text this way; only a miss makes a string (the key kept). Open
 * addressing with linear probing over a power-of-two table kept at most half full.
 *
 * Each slot is 8 numbers in one Int32Array (32 bytes, half a cache line): the hash, the value, the key's length + 1
 * (0: empty; negated for a key kept in `long`) and the key itself, four characters to a number, when it is at most
 * `INLINE` characters below 256 (a user id or an IPv4 address as a log writes it); a longer key is kept in `long`
 * and the slot holds its index. A lookup of a short key so reads one place in memory, where an array of keys, one
 * of hashes, one of values and the key string were four: on the 10,000,000-line log of `pnpm bench tune` (150,000
 * identities), the workers' CPU time went from a median of 12.4 s to 11.3 s over six runs of each, 2 threads.
 */

/** `get`'s answer when the key is not in the map (values themselves may be -1). */
export const ABSENT = -2;

const SLOT = 8;
const HASH = 0;
const VALUE = 1;
const LENGTH = 2;
const KEY = 3;
/** Characters of a key kept in its slot: 5 numbers of 4. */
const INLINE = 20;

export class TextSliceMap {
  size = 0;
  private slots: Int32Array;
  private long: string[] = [];
  private mask: number;

  constructor(capacity = 1 << 10) {
    this.slots = new Int32Array(capacity * SLOT);
    this.mask = capacity - 1;
  }

  /** The value of key `text.slice(start, end)`, or `ABSENT`. */
  get(text: string, start: number, end: number): number {
    const hash = hashOf(text, start, end);
    const slots = this.slots;
    const inline = inlined(text, start, end);
    const length = inline ? end - start + 1 : start - end - 1;
    for (let i = hash & this.mask; ; i = (i + 1) & this.mask) {
      const s = i * SLOT;
      const stored = slots[s + LENGTH]!;
      if (stored === 0) return ABSENT;
      if (slots[s + HASH] === hash && stored === length && this.holds(s, inline, text, start, end)) return slots[s + VALUE]!;
    }
  }

  /** Adds `key` (not in the map yet), which the map keeps: pass a string that shares no memory with a large one. */
  set(key: string, value: number): void {
    if ((this.size + 1) * 2 > this.mask + 1) this.resize((this.mask + 1) * 2);
    const hash = hashOf(key, 0, key.length);
    let i = hash & this.mask;
    while (this.slots[i * SLOT + LENGTH] !== 0) i = (i + 1) & this.mask;
    const s = i * SLOT;
    const slots = this.slots;
    slots[s + HASH] = hash;
    slots[s + VALUE] = value;
    if (inlined(key, 0, key.length)) {
      slots[s + LENGTH] = key.length + 1;
      for (let w = 0; w * 4 < key.length; w++) slots[s + KEY + w] = word(key, 4 * w, key.length);
    } else {
      slots[s + LENGTH] = -key.length - 1;
      slots[s + KEY] = this.long.length;
      this.long.push(key);
    }
    this.size++;
  }

  clear(): void {
    this.slots.fill(0);
    this.long = [];
    this.size = 0;
  }

  /** Whether slot `s`, whose length and kind (`inline`) match, holds the key `text.slice(start, end)`. */
  private holds(s: number, inline: boolean, text: string, start: number, end: number): boolean {
    const slots = this.slots;
    if (!inline) return isAt(this.long[slots[s + KEY]!]!, text, start);
    for (let w = 0, at = start; at < end; w++, at += 4) if (slots[s + KEY + w] !== word(text, at, end)) return false;
    return true;
  }

  private resize(capacity: number): void {
    const old = this.slots;
    this.slots = new Int32Array(capacity * SLOT);
    this.mask = capacity - 1;
    for (let s = 0; s < old.length; s += SLOT) {
      if (old[s + LENGTH] === 0) continue;
      let i = old[s + HASH]! & this.mask;
      while (this.slots[i * SLOT + LENGTH] !== 0) i = (i + 1) & this.mask;
      this.slots.set(old.subarray(s, s + SLOT), i * SLOT);
    }
  }
}

/** Whether `text.slice(start, end)` is kept in a slot: at most `INLINE` characters, each below 256. */
function inlined(text: string, start: number, end: number): boolean {
  if (end - start > INLINE) return false;
  for (let i = start; i < end; i++) if (text.charCodeAt(i) > 255) return false;
  return true;
}

/** Up to four characters (below 256) from `at`, stopping at `end`, as one number. */
function word(text: string, at: number, end: number): number {
  let value = 0;
  for (let j = 0; j < 4 && at + j < end; j++) value |= text.charCodeAt(at + j) << (8 * j);
  return value;
}

function isAt(key: string, text: string, start: number): boolean {
  for (let i = 0; i < key.length; i++) if (key.charCodeAt(i) !== text.charCodeAt(start + i)) return false;
  return true;
}

/** FNV-1a over the UTF-16 code units, as a 32-bit integer (the empty key's is the offset basis, made one too). */
function hashOf(text: string, start: number, end: number): number {
  let hash = 0x811c9dc5 | 0;
  for (let i = start; i < end; i++) hash = Math.imul(hash ^ text.charCodeAt(i), 0x01000193);
  return hash;
}
