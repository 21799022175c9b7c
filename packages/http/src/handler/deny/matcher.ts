/**
 * The deny list's matcher (its compile: deny-list.ts): an exact-identity Map and, per IP version, one Map per prefix
 * length present, keyed by the masked network, each behind a bit filter (deny-filter.ts). A lookup costs one Map get
 * for the identity and one mask, filter probe and (rarely) Map get per distinct prefix length, whatever the number of
 * entries (100,000 included).
 *
 * The matcher also changes in place, an entry at a time (`apply`, as a limiter's `a live deny list's change()` changes
 * its list), answering exactly as a compile of the changed list would, at a cost per entry changed:
 * - several entries can fall on one key (`203.0.113.5/24` and `203.0.113.0/24`; two IPv6 /64s in one /56, widened
 *   to it). The Map holds the one that speaks for the key, the longest-lived (`outlasts`); every entry of such a key
 *   is also kept in a side Map (only those keys), so removing the one that speaks hands the key to the next;
 * - a new prefix length adds its group in order (most specific first); an emptied group is dropped;
 * - an added network sets its filter bit; removals leave theirs set, and a filter is rebuilt when it has grown
 *   well past its size or gone mostly stale (deny-filter.ts).
 */
import type { DenyEntry, DenyListStep } from '@sluice/core/config';
import { addKey, filterIsWorn, filterOf, hash6, mayHold, type Filter } from './filter.js';
import { IDENTITY, MALFORMED, MAX_REASON, V4, V6, maskOf, placeMatch, readEntry, word, type MatchPlace } from './entry.js';
import type { IpAddress } from '../../ip/address.js';

export type { DenyEntry };

export interface DenyMatcher {
  /** Entries that take part (malformed ones are left out). */
  readonly size: number;
  /** Whether any entry is an IP block: only then is the client's address worth resolving. */
  readonly hasRanges: boolean;
  /** Malformed entries, described, in the order they were read (empty when every entry was read). */
  readonly problems: readonly string[];
  /**
   * The live entry that denies this identity or address, the most specific block first; undefined when none does.
   * `now` is read only when a candidate entry carries `until`.
   */
  match(identity: string | undefined, address: IpAddress | undefined, now: () => number): DenyEntry | undefined;
}

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
  /** Networks held (the Maps' sizes summed). */
  count: number;
  filter: Filter;
}

interface Problem {
  readonly text: string;
  /** The lineage version of the change that added the entry (0 for a compile). */
  readonly version: number;
  /** Whether the entry was left out (else it applies, its reason cut). */
  readonly leftOut: boolean;
}

const UNBUILT: Filter = { bits: new Int32Array(1), shift: 27, capacity: 0, stale: 0 };

export class MutableDenyMatcher implements DenyMatcher {
  /** The lineage version it answers for (deny-compile.ts): problems of the entries a change adds carry it. */
  version = 0;
  size = 0;
  hasRanges = false;
  /** Entries held, taking part or malformed: as many as the list's once every entry of it is read. */
  entries = 0;
  private identities = new Map<string, DenyEntry>();
  /** Identity keys that start with `ip:`: the shared identity of an anonymous client can only equal one of those. */
  private ipIdentities = 0;
  private v4 = new Map<number, V4Group>();
  private v6 = new Map<number, V6Group>();
  /** The groups, most specific first: the entry that names the client most closely gives the reason. */
  private v4Groups: V4Group[] = [];
  private v6Groups: V6Group[] = [];
  /** Every entry of a key that several fall on, by the key's name (`slot`). */
  private shared = new Map<string, DenyEntry[]>();
  /** Problems by match (an entry without a string match has a key of its own, which only `clear` removes). */
  private malformed = new Map<unknown, Problem[]>();
  private problemTexts: readonly string[] | undefined = [];
  /** Whether the groups are sorted and filtered: until `seal`, adding is a compile's, and only fills the Maps. */
  private sealed = false;
  /** Where `placeMatch` found the last match to fall: one object for every entry read. */
  private readonly found: MatchPlace = { length: 0, high: 0, low: 0 };

  /** `ipv6Prefix`: the client identity's IPv6 grouping (48 to 64), to which narrower IPv6 blocks are widened. */
  constructor(private readonly ipv6Prefix: number) {}

  get problems(): readonly string[] {
    if (this.problemTexts === undefined) {
      const texts: string[] = [];
      for (const problems of this.malformed.values()) for (const problem of problems) texts.push(problem.text);
      this.problemTexts = texts;
    }
    return this.problemTexts;
  }

  /** The problems of entries added by changes after lineage version `version`, still in the list. */
  problemsSince(version: number): string[] {
    const texts: string[] = [];
    for (const problems of this.malformed.values()) for (const problem of problems) if (problem.version > version) texts.push(problem.text);
    return texts;
  }

  match(identity: string | undefined, address: IpAddress | undefined, now: () => number): DenyEntry | undefined {
    const identities = this.identities;
    if (identity !== undefined && identities.size > 0 && (this.ipIdentities > 0 || !identity.startsWith('ip:'))) {
      const entry = identities.get(identity);
      if (entry !== undefined && (entry.until === undefined || entry.until > now())) return entry;
    }
    if (address === undefined) return undefined;
    const bytes = address.bytes;
    if (address.version === 4) {
      const groups = this.v4Groups;
      const value = word(bytes, 0);
      for (let g = 0; g < groups.length; g++) {
        const group = groups[g]!;
        const key = value & group.mask;
        if (!mayHold(group.filter, key)) continue;
        const entry = group.networks.get(key);
        if (entry !== undefined && (entry.until === undefined || entry.until > now())) return entry;
      }
      return undefined;
    }
    const groups = this.v6Groups;
    const high = word(bytes, 0);
    const low = word(bytes, 4);
    for (let g = 0; g < groups.length; g++) {
      const group = groups[g]!;
      const h = high & group.highMask;
      const l = low & group.lowMask;
      if (!mayHold(group.filter, hash6(h, l))) continue;
      const entry = group.networks.get(h)?.get(l);
      if (entry !== undefined && (entry.until === undefined || entry.until > now())) return entry;
    }
    return undefined;
  }

  /**
   * Applies one change of core's journal (`denyChangesSince`: `clear`, then `remove`, then `add`), at a cost per
   * entry it names, and moves to the version it makes.
   */
  apply(step: DenyListStep): void {
    this.version = step.version;
    if (step.clear) this.clear();
    for (const match of step.remove) this.remove(match);
    for (const entry of step.add) this.add(entry);
  }

  /**
   * Adds an entry beside those there (one with the same match included: remove that first to replace it). `index`
   * is its place in a list being compiled, which problems name; an entry added by a change is named by its match.
   */
  add(raw: unknown, index?: number): void {
    this.entries++;
    const entry = readEntry(raw);
    if (typeof entry === 'string') return this.recordProblem(raw, index, entry, true);
    if (entry !== raw)
      this.recordProblem(raw, index, `reason must be a string of at most ${MAX_REASON} characters; the entry applies with it cut`, false);
    const match = entry.match;
    const kind = placeMatch(match, this.ipv6Prefix, this.found);
    if (kind === MALFORMED) {
      const said = index === undefined ? '' : `${JSON.stringify(match)} `;
      return this.recordProblem(raw, index, `${said}looks like an IP address but is neither an address nor a CIDR block`, true);
    }
    this.size++;
    if (kind === IDENTITY) {
      if (this.put(this.identities, match, entry, kind) && match.startsWith('ip:')) this.ipIdentities++;
    } else if (kind === V4) {
      const group = this.v4Group(this.found.length);
      const key = this.found.high;
      if (this.put(group.networks, key, entry, kind) && this.sealed) {
        addKey(group.filter, key);
        if (filterIsWorn(group.filter, group.networks.size)) group.filter = filterOf(group.networks.keys(), group.networks.size);
      }
    } else {
      const group = this.v6Group(this.found.length);
      const high = this.found.high;
      let lows = group.networks.get(high);
      if (lows === undefined) group.networks.set(high, (lows = new Map()));
      if (this.put(lows, this.found.low, entry, kind)) {
        group.count++;
        if (this.sealed) {
          addKey(group.filter, hash6(high, this.found.low));
          if (filterIsWorn(group.filter, group.count)) group.filter = filter6(group);
        }
      }
    }
  }

  /** Removes every entry whose match is `match` (none: nothing changes). */
  remove(match: string): void {
    const problems = this.malformed.get(match);
    if (problems !== undefined) {
      for (const problem of problems) if (problem.leftOut) this.entries--;
      this.malformed.delete(match);
      this.problemTexts = undefined;
    }
    const kind = placeMatch(match, this.ipv6Prefix, this.found);
    let removed = 0;
    if (kind === IDENTITY) {
      removed = this.take(this.identities, match, match, kind);
      if (removed > 0 && !this.identities.has(match) && match.startsWith('ip:')) this.ipIdentities--;
    } else if (kind === V4) {
      const group = this.v4.get(this.found.length);
      if (group === undefined) return;
      const held = group.networks.size;
      removed = this.take(group.networks, this.found.high, match, kind);
      if (group.networks.size < held) {
        group.filter.stale++;
        if (group.networks.size === 0) this.drop(this.v4, this.v4Groups, group);
        else if (filterIsWorn(group.filter, group.networks.size)) group.filter = filterOf(group.networks.keys(), group.networks.size);
      }
    } else if (kind === V6) {
      const group = this.v6.get(this.found.length);
      const lows = group?.networks.get(this.found.high);
      if (group === undefined || lows === undefined) return;
      const held = lows.size;
      removed = this.take(lows, this.found.low, match, kind);
      if (lows.size < held) {
        if (lows.size === 0) group.networks.delete(this.found.high);
        group.count--;
        group.filter.stale++;
        if (group.count === 0) this.drop(this.v6, this.v6Groups, group);
        else if (filterIsWorn(group.filter, group.count)) group.filter = filter6(group);
      }
    }
    this.size -= removed;
    this.entries -= removed;
  }

  /** Removes every entry. */
  clear(): void {
    this.identities = new Map();
    this.ipIdentities = 0;
    this.v4 = new Map();
    this.v6 = new Map();
    this.v4Groups = [];
    this.v6Groups = [];
    this.shared = new Map();
    this.malformed = new Map();
    this.problemTexts = [];
    this.size = 0;
    this.entries = 0;
    this.hasRanges = false;
  }

  /** Ends a compile (deny-list.ts): sorts the groups and builds their filters. Later adds keep both up to date. */
  seal(): void {
    if (this.sealed) return;
    this.sealed = true;
    this.v4Groups = [...this.v4.values()].sort(mostSpecificFirst);
    this.v6Groups = [...this.v6.values()].sort(mostSpecificFirst);
    for (const group of this.v4Groups) group.filter = filterOf(group.networks.keys(), group.networks.size);
    for (const group of this.v6Groups) group.filter = filter6(group);
    this.hasRanges = this.v4Groups.length + this.v6Groups.length > 0;
  }

  /** The name of the key `placeMatch` last found (for an identity, the match itself), for the side Map. */
  private slot(kind: number, match: string): string {
    if (kind === IDENTITY) return `i${match}`;
    return kind === V4 ? `4/${this.found.length}/${this.found.high}` : `6/${this.found.length}/${this.found.high}/${this.found.low}`;
  }

  /** Puts the entry on `key`, where it speaks if it outlasts the one there; whether the key is new. */
  private put<K>(map: Map<K, DenyEntry>, key: K, entry: DenyEntry, kind: number): boolean {
    const held = map.get(key);
    if (held === undefined) {
      map.set(key, entry);
      return true;
    }
    const name = this.slot(kind, entry.match);
    const all = this.shared.get(name);
    if (all === undefined) this.shared.set(name, [held, entry]);
    else all.push(entry);
    if (outlasts(entry, held)) map.set(key, entry);
    return false;
  }

  /** Takes the entries of `match` off `key`, the next entry there speaking for it; how many were taken. */
  private take<K>(map: Map<K, DenyEntry>, key: K, match: string, kind: number): number {
    const held = map.get(key);
    if (held === undefined) return 0;
    const name = this.shared.size === 0 ? undefined : this.slot(kind, match);
    const all = name === undefined ? undefined : this.shared.get(name);
    if (all === undefined) {
      if (held.match !== match) return 0;
      map.delete(key);
      return 1;
    }
    const rest = all.filter((entry) => entry.match !== match);
    if (rest.length === 0) {
      map.delete(key);
      this.shared.delete(name!);
    } else {
      if (rest.length === 1) this.shared.delete(name!);
      else this.shared.set(name!, rest);
      map.set(key, longestLived(rest));
    }
    return all.length - rest.length;
  }

  private v4Group(length: number): V4Group {
    let group = this.v4.get(length);
    if (group === undefined) {
      group = { length, mask: maskOf(length), networks: new Map(), filter: UNBUILT };
      this.v4.set(length, group);
      if (this.sealed) this.insert(this.v4Groups, group);
    }
    return group;
  }

  private v6Group(length: number): V6Group {
    let group = this.v6.get(length);
    if (group === undefined) {
      const highMask = maskOf(Math.min(length, 32));
      group = { length, highMask, lowMask: maskOf(Math.max(length - 32, 0)), networks: new Map(), count: 0, filter: UNBUILT };
      this.v6.set(length, group);
      if (this.sealed) this.insert(this.v6Groups, group);
    }
    return group;
  }

  /** A group new to a sealed matcher, in its place among the others, with a filter of its own. */
  private insert<G extends V4Group | V6Group>(groups: G[], group: G): void {
    group.filter = filterOf([], 0);
    let at = 0;
    while (at < groups.length && groups[at]!.length > group.length) at++;
    groups.splice(at, 0, group);
    this.hasRanges = true;
  }

  private drop<G extends V4Group | V6Group>(byLength: Map<number, G>, groups: G[], group: G): void {
    byLength.delete(group.length);
    groups.splice(groups.indexOf(group), 1);
    this.hasRanges = this.v4Groups.length + this.v6Groups.length > 0;
  }

  private recordProblem(raw: unknown, index: number | undefined, text: string, leftOut: boolean): void {
    const match = (raw as { match?: unknown } | null)?.match;
    const label = index === undefined ? `change.add ${JSON.stringify(match) ?? typeof match}` : `deny[${index}]`;
    const key = typeof match === 'string' ? match : {};
    const problems = this.malformed.get(key);
    const problem = { text: `${label}: ${text}`, version: this.version, leftOut };
    if (problems === undefined) this.malformed.set(key, [problem]);
    else problems.push(problem);
    this.problemTexts = undefined;
  }
}

/**
 * Whether `entry` speaks for a key rather than `held`, there before it: the one that lasts longer speaks for both (no
 * `until` lasts forever), so an expired entry never hides a live one. Between two that last as long, the match
 * first in code unit order: an order of the entries alone, not of the list, which core reorders as it changes.
 */
function outlasts(entry: DenyEntry, held: DenyEntry): boolean {
  if (entry.until === held.until) return entry.match < held.match;
  return held.until !== undefined && (entry.until === undefined || entry.until > held.until);
}

/** The entry that speaks for a key the entries fall on. */
function longestLived(entries: readonly DenyEntry[]): DenyEntry {
  let best = entries[0]!;
  for (let i = 1; i < entries.length; i++) if (outlasts(entries[i]!, best)) best = entries[i]!;
  return best;
}

function mostSpecificFirst(a: { readonly length: number }, b: { readonly length: number }): number {
  return b.length - a.length;
}

function filter6(group: V6Group): Filter {
  const hashes: number[] = [];
  for (const [high, lows] of group.networks) for (const low of lows.keys()) hashes.push(hash6(high, low));
  return filterOf(hashes, hashes.length);
}
