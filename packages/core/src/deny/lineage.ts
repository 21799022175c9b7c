/**
 * How a limiter's deny list changes one entry at a time (a live list's `change`) while readers that built
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
import { describe } from '../shared/describe.js';
import { checkDenyList, isCheckedDenyList, markCheckedDenyList, type DenyEntry } from './entries.js';
import type { DenyListChange } from './source.js';
import { SluiceError } from '../shared/errors.js';

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

/**
 * A deny list that takes changes of some entries: give it to a limiter with `configure({ deny: liveDenyList(entries) })`,
 * then change it with its `change({ clear?, remove?, add? })`. `watchConfig` gives its limiter one. Entries are checked as
 * `configure({ deny })` checks them.
 */
export function liveDenyList(entries: readonly DenyEntry[] = []): LiveDenyLineage {
  return new LiveDenyLineage(isCheckedDenyList(entries) ? entries : checkDenyList(entries, 'liveDenyList: entries'));
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

/**
 * A live deny list: a limiter given one (`configure({ deny: liveDenyList(entries) })`) takes changes of some entries
 * (`change`), each applied in place. The limiter holds it; readers follow it as a lineage.
 */
export class LiveDenyLineage implements DenyLineage {
  /** What the limiter recognises it by: a plain array cannot take changes. */
  readonly live = true;
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
   * Checks `change` as configure checks a list (the first bad entry throws, naming it,
   * and nothing changes), then applies it in place. Answers whether the list changed (removing what it does not
   * hold changes nothing). Costs the change's entries: no pass over the list.
   */
  change(change: DenyListChange): boolean {
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

/** A change checked: every problem throws before anything is applied. Kept short: it ships in every worker. */
function readChange(change: unknown): { clear: boolean; removed: Set<string>; added: Map<string, DenyEntry> } {
  const { clear, remove = [], add = [], ...other } = (change ?? 0) as Record<string, unknown>;
  if (
    typeof change !== 'object' ||
    Object.keys(other).length > 0 ||
    (clear !== undefined && typeof clear !== 'boolean') ||
    !Array.isArray(remove) ||
    remove.some((match) => typeof match !== 'string' || match === '') ||
    !Array.isArray(add)
  ) {
    throw new SluiceError(
      'INVALID_OPTION',
      `liveDenyList: change must be { clear?: boolean, remove?: matches, add?: entries }, e.g. { remove: ['user:42'] }, got ${Object.keys(other)[0] === undefined ? describe(change) : `the unknown field ${JSON.stringify(Object.keys(other)[0])}`}`,
    );
  }
  // A later entry with the same match wins, as in the store's hash; each checked as configure({ deny }) checks a list.
  const last = new Map((add as Array<{ match?: unknown }>).map((value) => [value?.match, value]));
  const added = new Map(checkDenyList([...last.values()], 'liveDenyList: change.add').map((entry) => [entry.match, entry]));
  return { clear: clear === true, removed: new Set(remove as string[]), added };
}
