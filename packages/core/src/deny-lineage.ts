/**
 * How a limiter's deny list changes one entry at a time (`configure({ denyChanges })`) while readers that built
 * something from it (the HTTP layer's compiled matcher) follow at the cost of the change, not of the list.
 *
 * Every list a limiter holds belongs to a lineage, owned by that limiter, and has a version in it: a full list
 * (`configure({ deny })`) starts a lineage at version 0, and each change makes the next version, a new frozen array,
 * with the change kept in the lineage's journal (the last JOURNAL_LENGTH). A reader keeps what it built per lineage
 * with its version, and applies the journal's changes since then (`denyChangesSince`); a reader too far behind
 * builds again from the list. The journal holds changes, never lists, so a lineage keeps no old list alive.
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

/** A lineage: opaque to readers, who key what they build by it. */
export interface DenyLineage {
  readonly owner: object;
  readonly journal: DenyListStep[];
}

/** Changes a lineage keeps for readers behind it; one further behind builds again from the list. */
export const JOURNAL_LENGTH = 256;

const placed = new WeakMap<readonly DenyEntry[], { readonly lineage: DenyLineage; readonly version: number }>();

/** The list's lineage and version; undefined for an array no limiter made (then read it whole). */
export function denyListVersion(list: readonly DenyEntry[]): { readonly lineage: DenyLineage; readonly version: number } | undefined {
  return placed.get(list);
}

/**
 * The changes that lead from `from` to `to` in `lineage`, oldest first; undefined when the journal no longer
 * holds them all (the reader builds again from the list).
 */
export function denyChangesSince(lineage: DenyLineage, from: number, to: number): readonly DenyListStep[] | undefined {
  if (from > to) return undefined;
  if (from === to) return [];
  const journal = lineage.journal;
  const first = journal.length - (to - from);
  if (first < 0 || journal[first]?.version !== from + 1 || journal[journal.length - 1]?.version !== to) return undefined;
  return journal.slice(first);
}

/** Gives `list` (a full list set by configure) a lineage of its own owned by `owner`, unless it has one already. */
export function placeDenyList(list: readonly DenyEntry[], owner: object): readonly DenyEntry[] {
  if (!placed.has(list)) placed.set(list, { lineage: { owner, journal: [] }, version: 0 });
  return list;
}

/**
 * `configure({ denyChanges })`: the list after `change`, checked as configure checks a list (the first bad entry
 * throws, naming it), as the next version of `current`'s lineage when `owner` owns it (else of a new lineage).
 * An empty change returns `current` itself. Costs one pass over the list to copy it, and a check of each added entry.
 */
export function applyDenyChange(current: readonly DenyEntry[], change: unknown, owner: object): readonly DenyEntry[] {
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
  const wipe = clear === true;
  if (!wipe && removed.size === 0 && added.size === 0) return current;
  // What goes from the list: the removed matches, and those an added entry replaces.
  const dropped = new Set(removed);
  for (const match of added.keys()) dropped.add(match);
  const next: DenyEntry[] = [];
  if (!wipe) {
    if (dropped.size === 0) for (let i = 0; i < current.length; i++) next.push(current[i]!);
    else for (let i = 0; i < current.length; i++) if (!dropped.has(current[i]!.match)) next.push(current[i]!);
  }
  for (const entry of added.values()) next.push(entry);
  const list = markCheckedDenyList(next);
  const from = placed.get(current);
  if (from === undefined || from.lineage.owner !== owner) {
    placed.set(list, { lineage: { owner, journal: [] }, version: 0 });
    return list;
  }
  const version = from.version + 1;
  const journal = from.lineage.journal;
  journal.push({ version, clear: wipe, remove: [...dropped], add: [...added.values()] });
  if (journal.length > JOURNAL_LENGTH) journal.splice(0, journal.length - JOURNAL_LENGTH);
  placed.set(list, { lineage: from.lineage, version });
  return list;
}
