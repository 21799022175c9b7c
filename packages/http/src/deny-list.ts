/**
 * The deny list's matcher: a limiter's `deny` entries compiled once into an exact-identity Map and, per IP version,
 * one Map per prefix length present, keyed by the masked network. A lookup costs one Map get for the identity and
 * one mask and Map get per distinct prefix length, whatever the number of entries (100,000 included).
 *
 * What an entry's `match` is read as: an IP address or CIDR block (`203.0.113.0/24`, `2001:db8::/56`, also with
 * the identity prefix `ip:`), else an identity, exactly (`user:42`). An IPv6 block narrower than the client
 * identity's IPv6 prefix (a single address, a /64 under the default /56) is widened to that prefix, so a client
 * cannot step out of it by changing its interface id; an IPv4-mapped block (`::ffff:203.0.113.0/120`) is the IPv4
 * block it wraps, as addresses are read. An entry whose `until` is at or before `now` does not match.
 * A malformed entry is left out and listed in `problems`, so it is reported once rather than thrown per request.
 */
import type { DenyEntry } from '@sluice/core/config';
import { parseRange } from './ip-range.js';
import { maskIp, type IpAddress } from './ip-address.js';

export type { DenyEntry };

export interface DenyMatcher {
  /** Entries that take part (malformed ones are left out). */
  readonly size: number;
  /** Whether any entry is an IP block: only then is the client's address worth resolving. */
  readonly hasRanges: boolean;
  /** Malformed entries, described, in list order (empty when every entry was read). */
  readonly problems: readonly string[];
  /**
   * The live entry that denies this identity or address, the most specific block first; undefined when none does.
   * `now` is read only when a candidate entry carries `until`.
   */
  match(identity: string | undefined, address: IpAddress | undefined, now: () => number): DenyEntry | undefined;
}

/**
 * Longest `reason` kept (core's limit; core checks lists set by configure and drops bad entries from the shared
 * store, so what follows is defence against a list that bypassed it); a longer one is cut, not a reason to drop the denial.
 */
const MAX_REASON = 200;
/** Characters an IP address or block is written with: such a `match` that does not parse is malformed, not an identity. */
const ADDRESS_LIKE = /^[0-9a-fA-F:./]+$/;

interface V4Group {
  readonly length: number;
  readonly mask: number;
  readonly networks: Map<number, DenyEntry>;
  filter: Filter;
}

/** IPv6 blocks are at most 64 bits long here (wider ones were cut to the identity's prefix): two 32-bit halves. */
interface V6Group {
  readonly length: number;
  readonly highMask: number;
  readonly lowMask: number;
  readonly networks: Map<number, Map<number, DenyEntry>>;
  filter: Filter;
}

/**
 * A bit per hashed network, set for each one present: most clients are on no list, and a bit in a table small
 * enough to stay in cache says so where a Map of tens of thousands of keys would cost a cache miss per prefix length.
 * A set bit only says "look in the Map".
 */
interface Filter {
  readonly bits: Int32Array;
  /** 32 minus the table's size in bits, as a power of two: the hash's top bits index it. */
  readonly shift: number;
}

const EMPTY_FILTER: Filter = { bits: new Int32Array(1), shift: 27 };

/**
 * Compiles `entries`; `ipv6Prefix` is the client identity's IPv6 grouping (48 to 64). Never throws: what it cannot
 * read is in `problems`.
 */
export function compileDenyList(entries: readonly DenyEntry[], ipv6Prefix: number): DenyMatcher {
  const compiler = new DenyListCompiler(entries, ipv6Prefix);
  compiler.step(entries.length);
  return compiler.finish();
}

/**
 * A compile that can be done a part at a time: `step(n)` reads the next n entries, `finish()` (once every entry is
 * read) builds the matcher. deny-check.ts compiles a long list in parts, between requests, so a change to a list of
 * 100,000 entries never holds the event loop for the whole compile.
 */
export class DenyListCompiler {
  private readonly identities = new Map<string, DenyEntry>();
  private readonly v4 = new Map<number, V4Group>();
  private readonly v6 = new Map<number, V6Group>();
  private readonly problems: string[] = [];
  private size = 0;
  private next = 0;

  constructor(
    private readonly entries: readonly DenyEntry[],
    private readonly ipv6Prefix: number,
  ) {}

  /** Whether every entry has been read. */
  get done(): boolean {
    return this.next >= this.entries.length;
  }

  /** Reads up to `count` more entries. */
  step(count: number): void {
    const end = Math.min(this.entries.length, this.next + count);
    for (let i = this.next; i < end; i++) this.read(i);
    this.next = end;
  }

  private read(i: number): void {
    const raw = this.entries[i];
    const entry = readEntry(raw);
    if (typeof entry === 'string') {
      this.problems.push(`deny[${i}]: ${entry}`);
      return;
    }
    if (entry !== raw)
      this.problems.push(`deny[${i}]: reason must be a string of at most ${MAX_REASON} characters; the entry applies with it cut`);
    const text = entry.match.startsWith('ip:') ? entry.match.slice(3) : entry.match;
    if (!ADDRESS_LIKE.test(text) || !/[.:/]/.test(text)) {
      keep(this.identities, entry.match, entry);
      this.size++;
      return;
    }
    const range = parseRange(text);
    if (range === undefined) {
      this.problems.push(`deny[${i}]: ${JSON.stringify(entry.match)} looks like an IP address but is neither an address nor a CIDR block`);
      return;
    }
    this.size++;
    const bytes = range.network.bytes;
    if (range.network.version === 4) {
      const length = range.prefixLength;
      let group = this.v4.get(length);
      if (group === undefined) this.v4.set(length, (group = { length, mask: maskOf(length), networks: new Map(), filter: EMPTY_FILTER }));
      keep(group.networks, word(bytes, 0) & group.mask, entry);
    } else {
      const length = Math.min(range.prefixLength, this.ipv6Prefix);
      const network = maskIp(range.network, length).bytes;
      let group = this.v6.get(length);
      if (group === undefined) {
        const highMask = maskOf(Math.min(length, 32));
        group = { length, highMask, lowMask: maskOf(Math.max(length - 32, 0)), networks: new Map(), filter: EMPTY_FILTER };
        this.v6.set(length, group);
      }
      const high = word(network, 0);
      let lows = group.networks.get(high);
      if (lows === undefined) group.networks.set(high, (lows = new Map()));
      keep(lows, word(network, 4), entry);
    }
  }

  /** The matcher of every entry read (call once `done`). */
  finish(): DenyMatcher {
    const identities = this.identities;
    // Most specific first: the entry that names the client most closely gives the reason.
    const v4Groups = [...this.v4.values()].sort((a, b) => b.length - a.length);
    const v6Groups = [...this.v6.values()].sort((a, b) => b.length - a.length);
    for (const group of v4Groups) group.filter = filterOf([...group.networks.keys()]);
    for (const group of v6Groups) {
      const hashes: number[] = [];
      for (const [high, lows] of group.networks) for (const low of lows.keys()) hashes.push(hash6(high, low));
      group.filter = filterOf(hashes);
    }
    // The shared identity of an anonymous client is `ip:…`, which only an identity entry that starts so can equal.
    let ipIdentities = false;
    for (const key of identities.keys()) if (key.startsWith('ip:')) ipIdentities = true;
    const live = (entry: DenyEntry | undefined, now: () => number): entry is DenyEntry =>
      entry !== undefined && (entry.until === undefined || entry.until > now());

    return {
      size: this.size,
      hasRanges: v4Groups.length + v6Groups.length > 0,
      problems: this.problems,
      match(identity, address, now) {
        if (identity !== undefined && identities.size > 0 && (ipIdentities || !identity.startsWith('ip:'))) {
          const entry = identities.get(identity);
          if (live(entry, now)) return entry;
        }
        if (address === undefined) return undefined;
        const bytes = address.bytes;
        if (address.version === 4) {
          const value = word(bytes, 0);
          for (let g = 0; g < v4Groups.length; g++) {
            const group = v4Groups[g]!;
            const key = value & group.mask;
            if (!mayHold(group.filter, key)) continue;
            const entry = group.networks.get(key);
            if (live(entry, now)) return entry;
          }
          return undefined;
        }
        const high = word(bytes, 0);
        const low = word(bytes, 4);
        for (let g = 0; g < v6Groups.length; g++) {
          const group = v6Groups[g]!;
          const h = high & group.highMask;
          const l = low & group.lowMask;
          if (!mayHold(group.filter, hash6(h, l))) continue;
          const entry = group.networks.get(h)?.get(l);
          if (live(entry, now)) return entry;
        }
        return undefined;
      },
    };
  }
}

/** The entry as it will be matched, or what is wrong with it. */
function readEntry(raw: unknown): DenyEntry | string {
  if (typeof raw !== 'object' || raw === null) return `an entry must be an object { match, until?, reason? }, got ${typeof raw}`;
  const { match, until, reason } = raw as Partial<Record<keyof DenyEntry, unknown>>;
  if (typeof match !== 'string' || match.trim() === '' || match !== match.trim()) {
    return `match must be a non-empty identity or IP block without surrounding spaces, got ${JSON.stringify(match) ?? typeof match}`;
  }
  if (until !== undefined && (typeof until !== 'number' || !Number.isFinite(until))) {
    return `until must be epoch milliseconds, got ${JSON.stringify(until) ?? typeof until}`;
  }
  if (reason === undefined || (typeof reason === 'string' && reason.length <= MAX_REASON)) return raw as DenyEntry;
  return { ...(raw as DenyEntry), reason: typeof reason === 'string' ? reason.slice(0, MAX_REASON) : undefined };
}

/**
 * Two entries for one key: the one that lasts longer speaks for both (no `until` lasts forever), so an expired
 * entry never hides a live one.
 */
function keep<K>(map: Map<K, DenyEntry>, key: K, entry: DenyEntry): void {
  const held = map.get(key);
  if (held === undefined || (held.until !== undefined && (entry.until === undefined || entry.until > held.until))) map.set(key, entry);
}

/** Four bytes from `offset` as a signed 32-bit integer (a small integer in V8: Map keys stay unboxed). */
function word(bytes: Uint8Array, offset: number): number {
  return (bytes[offset]! << 24) | (bytes[offset + 1]! << 16) | (bytes[offset + 2]! << 8) | bytes[offset + 3]!;
}

/** The first `length` (0 to 32) bits set, as a signed 32-bit integer. */
function maskOf(length: number): number {
  return length === 0 ? 0 : (-1 << (32 - length)) | 0;
}

/** Sixteen bits per key, so about one lookup in twenty of an absent network passes the filter to its Map. */
function filterOf(keys: readonly number[]): Filter {
  const size = Math.min(24, Math.max(10, Math.ceil(Math.log2(keys.length * 16))));
  const filter = { bits: new Int32Array(2 ** (size - 5)), shift: 32 - size };
  for (const key of keys) {
    const index = Math.imul(key, 0x9e3779b1) >>> filter.shift;
    filter.bits[index >>> 5]! |= 1 << (index & 31);
  }
  return filter;
}

function mayHold(filter: Filter, key: number): boolean {
  const index = Math.imul(key, 0x9e3779b1) >>> filter.shift;
  return (filter.bits[index >>> 5]! & (1 << (index & 31))) !== 0;
}

/** The two halves of an IPv6 network as one 32-bit key for the filter (the Map keeps them apart). */
function hash6(high: number, low: number): number {
  return Math.imul(high ^ Math.imul(low, 0x85ebca6b), 0xc2b2ae35) | 0;
}
