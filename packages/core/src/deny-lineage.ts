/**
 * How a limiter's deny list changes one entry at a time (`configure({ denyChanges })`) while readers that built
 * something from it (the HTTP layer's compiled matcher) follow at the cost of the change, not of the list.
 *
 * A limiter's list is a lineage: the entries as they are now (`head`, the number of changes made since the lineage
 * began), kept in place, and a journal of the last JOURNAL_LENGTH changes. A full list (`configure({ deny })`)
 * begins a new lineage; each change is applied in place at the cost of its entries (the lineage indexes the list by match when it begins), with no copy of the list: a
 * removal moves the last entry into the removed one's place. A reader that keeps what it built with the version it
 * was built at applies the journal's changes since then (`denyChangesSince`); one too far behind builds again from
 * the list. `limiter.deny`, the list as a frozen array, is made from the lineage when it is read after a change, so
 * only a reader of the whole array pays for a copy of it. The journal holds changes, never lists.
 */
import { describe } from './describe.js';
import { checkDenyEntry, markCheckedDenyList, type DenyEntry } from './deny-entries.js';
import { SluiceError } from './errors.js';

/** One change as the journal keeps it, checked: `clear` first, then `remove`, then `add`. */
export interface DenyListStep {
  /** The version this change made. */
  readonly version: number;
  readonly clear: boolean;
  /** Matches removed, including those an added entry replaces. */
  readonly remove: readonly string[];
  readonly add: readonly DenyEntry[];
}

/** A limiter's deny list as it changes: readers key what they build by it, and follow `head`. */
export interface DenyLineage {
  /** Changes applied since the lineage began: the version of the list as it is now. */
  readonly head: number;
  /** Entries now. */
  readonly size: number;
  readonly journal: readonly DenyListStep[];
}

/** Changes a lineage keeps for readers behind it; one further behind builds again from the list. */
export const JOURNAL_LENGTH = 256;

/** Arrays made from a lineage (and the full lists that began one), with the version they hold. */
const placed = new WeakMap<readonly DenyEntry[], { readonly lineage: DenyLineage; readonly version: number }>();

/** The lineage and version of an array a limiter gave as its `deny`; undefined for any other array. */
export function denyListVersion(list: readonly DenyEntry[]): { readonly lineage: DenyLineage; readonly version: number } | undefined {
  return placed.get(list);
}

/**
 * The changes that lead from version `from` to `to` of `lineage`, oldest first; undefined when the journal no
 * longer holds them all (the reader builds again from the list).
 */
export function denyChangesSince(lineage: DenyLineage, from: number, to: number): readonly DenyListStep[] | undefined {
  if (from > to) return undefined;
  if (from === to) return [];
  const journal = lineage.journal;
  const first = journal.length - (to - from);
  if (first < 0 || journal[first]?.version !== from + 1 || journal[journal.length - 1]?.version !== to) return undefined;
  return journal.slice(first);
}

/** The live lineage: a limiter's list, changed in place. */
export class LiveDenyLineage implements DenyLineage {
  head = 0;
  readonly journal: DenyListStep[] = [];
  /** The entries now; a removal moves the last entry into its place. */
  private readonly entries: DenyEntry[];
  /** Where each match is in `entries`. */
  private readonly index: Map<string, number>;
  /** `entries` as the frozen array `limiter.deny` gives, for the version it was made at. */
  private array: readonly DenyEntry[] | undefined;

  /** Begins a lineage with a full, checked list (which `list` gives back until the first change). */
  constructor(list: readonly DenyEntry[]) {
    this.entries = list.slice();
    // Indexed now, while the whole list is being taken: the first change then costs its entries like every other.
    this.index = indexOf(this.entries);
    this.array = list;
    if (!placed.has(list)) placed.set(list, { lineage: this, version: 0 });
  }

  get size(): number {
    return this.entries.length;
  }

  /** The list now, as a frozen array: the same array until the next change, made once after each. */
  get list(): readonly DenyEntry[] {
    let array = this.array;
    if (array === undefined) {
      array = markCheckedDenyList(this.entries.slice());
      placed.set(array, { lineage: this, version: this.head });
      this.array = array;
    }
    return array;
  }

  /**
   * `configure({ denyChanges })`: checks `change` as configure checks a list (the first bad entry throws, naming it,
   * and nothing changes), then applies it in place. Answers whether the list changed (removing what it does not
   * hold changes nothing). Costs the change's entries: no pass over the list.
   */
  apply(change: unknown): boolean {
    const { clear, removed, added } = readChange(change);
    const index = this.index;
    if (!clear && added.size === 0 && ![...removed].some((match) => index.has(match))) return false;
    // What goes: the removed matches, and those an added entry replaces (added again at the end).
    const dropped = new Set(removed);
    for (const match of added.keys()) dropped.add(match);
    const entries = this.entries;
    if (clear) {
      entries.length = 0;
      index.clear();
    } else {
      for (const match of dropped) {
        const at = index.get(match);
        if (at === undefined) continue;
        index.delete(match);
        const last = entries.pop()!;
        if (at < entries.length) {
          entries[at] = last;
          index.set(last.match, at);
        }
      }
    }
    for (const entry of added.values()) {
      index.set(entry.match, entries.length);
      entries.push(entry);
    }
    this.head++;
    this.array = undefined;
    this.journal.push({ version: this.head, clear, remove: [...dropped], add: [...added.values()] });
    if (this.journal.length > JOURNAL_LENGTH) this.journal.splice(0, this.journal.length - JOURNAL_LENGTH);
    return true;
  }
}

function indexOf(entries: readonly DenyEntry[]): Map<string, number> {
  const index = new Map<string, number>();
  for (let i = 0; i < entries.length; i++) index.set(entries[i]!.match, i);
  return index;
}

/** A change checked: every problem throws before anything is applied. */
function readChange(change: unknown): { clear: boolean; removed: Set<string>; added: Map<string, DenyEntry> } {
  if (typeof change !== 'object' || change === null || Array.isArray(change)) {
    throw new SluiceError(
      'INVALID_OPTION',
      `configure: denyChanges must be an object such as { add: [{ match: 'user:42' }], remove: ['203.0.113.0/24'] }, got ${describe(change)}`,
    );
  }
  const { clear, remove, add, ...other } = change as Record<string, unknown>;
  const unknown = Object.keys(other)[0];
  if (unknown !== undefined) {
    throw new SluiceError(
      'INVALID_OPTION',
      `configure: denyChanges: unknown field ${JSON.stringify(unknown)}; accepted fields are clear, remove, add`,
    );
  }
  if (clear !== undefined && typeof clear !== 'boolean')
    throw new SluiceError('INVALID_OPTION', `configure: denyChanges.clear must be a boolean, got ${describe(clear)}`);
  const removed = new Set<string>();
  if (remove !== undefined) {
    if (!Array.isArray(remove))
      throw new SluiceError('INVALID_OPTION', `configure: denyChanges.remove must be an array of matches, got ${describe(remove)}`);
    for (const [i, match] of (remove as unknown[]).entries()) {
      if (typeof match !== 'string' || match.length === 0)
        throw new SluiceError(
          'INVALID_OPTION',
          `configure: denyChanges.remove[${i}] must be a non-empty match string, got ${describe(match)}`,
        );
      removed.add(match);
    }
  }
  // A later entry with the same match wins, as in the store's hash.
  const added = new Map<string, DenyEntry>();
  if (add !== undefined) {
    if (!Array.isArray(add))
      throw new SluiceError('INVALID_OPTION', `configure: denyChanges.add must be an array of entries, got ${describe(add)}`);
    for (const [i, value] of (add as unknown[]).entries()) {
      const entry = checkDenyEntry(value, `configure: denyChanges.add[${i}]`);
      added.delete(entry.match);
      added.set(entry.match, entry);
    }
  }
  return { clear: clear === true, removed, added };
}
