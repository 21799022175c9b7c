/**
 * The bit filter in front of each prefix length's Map of networks (deny-matcher.ts): a bit per hashed network, set
 * for each one present. Most clients are on no list, and a bit in a table small enough to stay in cache says so
 * where a Map of tens of thousands of keys would cost a cache miss per prefix length. A set bit only says "look in
 * the Map": a bit left set by a removed network costs a Map get, never a wrong answer.
 *
 * A filter is sized once, at sixteen bits per network it was built for. A list changed in place sets the bit of each
 * network added; the owner builds the filter again when its networks have grown to twice what it was sized for, or
 * when more of its set bits belong to removed networks than to present ones. Each rebuild costs a pass over the
 * group's networks, paid for by at least as many changes since the last: amortised O(1) per change.
 */

export interface Filter {
  readonly bits: Int32Array;
  /** 32 minus the table's size in bits, as a power of two: the hash's top bits index it. */
  readonly shift: number;
  /** Networks it was sized for (sixteen bits each); past twice this, it is rebuilt larger. */
  readonly capacity: number;
  /** Networks removed since it was built, whose bits may still be set. */
  stale: number;
}

/** Largest table: 2^24 bits (2 MiB). */
const MAX_SIZE = 24;
/** Smallest table: 2^10 bits (128 bytes). */
const MIN_SIZE = 10;

/** A filter holding `keys`: sixteen bits per key, so about one lookup in twenty of an absent network passes to its Map. */
export function filterOf(keys: Iterable<number>, count: number): Filter {
  const size = Math.min(MAX_SIZE, Math.max(MIN_SIZE, Math.ceil(Math.log2(Math.max(1, count) * 16))));
  const filter: Filter = { bits: new Int32Array(2 ** (size - 5)), shift: 32 - size, capacity: 2 ** size / 16, stale: 0 };
  for (const key of keys) addKey(filter, key);
  return filter;
}

export function addKey(filter: Filter, key: number): void {
  const index = Math.imul(key, 0x9e3779b1) >>> filter.shift;
  filter.bits[index >>> 5]! |= 1 << (index & 31);
}

export function mayHold(filter: Filter, key: number): boolean {
  const index = Math.imul(key, 0x9e3779b1) >>> filter.shift;
  return (filter.bits[index >>> 5]! & (1 << (index & 31))) !== 0;
}

/** Whether a filter now holding `count` networks is due to be built again (see the top of this file). */
export function filterIsWorn(filter: Filter, count: number): boolean {
  return (count > 2 * filter.capacity && filter.shift > 32 - MAX_SIZE) || filter.stale > count;
}

/** The two halves of an IPv6 network as one 32-bit key for the filter (the Map keeps them apart). */
export function hash6(high: number, low: number): number {
  return Math.imul(high ^ Math.imul(low, 0x85ebca6b), 0xc2b2ae35) | 0;
}
