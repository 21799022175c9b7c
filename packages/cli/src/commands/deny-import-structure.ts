/**
 * `sluice config deny import` where the source keeps the deny list in a structure of its own (`source.deny`, core's
 * deny-source.ts): the structure is read whole, the file's difference from it taken as config-deny-import.ts takes
 * it from a document's list, and only that difference is sent, through core's addDenyEntries and removeDenyEntries
 * (changes of at most DENY_CHANGE_MAX entries each). A feed that matches the list sends nothing: the structure's
 * version stays where it was.
 *
 * Additions go first: an import stopped half way (a store that failed) has then blocked what the feed asks for
 * before unblocking what it drops. Before any structure is stored, the list is the document's own `deny` field (an
 * older release wrote it), which the first write moves into the structure.
 */
import {
  addDenyEntries,
  readDenyList,
  readLimiterConfig,
  removeDenyEntries,
  type ConfigSource,
  type DenyEntry,
  type DenyListSource,
  type DenyListVersion,
  type LimiterConfig,
} from '@sluice/core/config';
import type { SluiceError } from '@sluice/core';
import { plan, type ImportFlags, type Plan } from './deny-import-plan.js';
import { skippedDenyEntries, skippedWarning } from './deny-input.js';

/** What the import did to the structure. */
export interface StructureImport {
  plan: Plan;
  /** Where the structure is after the import (before it, on a dry run or when nothing differed); undefined: none stored. */
  version: DenyListVersion | undefined;
  written: boolean;
  warning: string;
}

export async function applyToStructure(
  source: ConfigSource,
  deny: DenyListSource,
  request: { flags: ImportFlags; wanted: ReadonlyMap<string, DenyEntry>; now: number },
): Promise<StructureImport> {
  const { flags, wanted, now } = request;
  const { name } = flags;
  const skipped = skippedDenyEntries();
  const before = (await deny.readChanges(name, undefined)).version;
  let held: Map<string, DenyEntry>;
  if (before === undefined) {
    const document = await readDocumentAlone(source, name, skipped.onBadDenyEntry);
    held = new Map((document?.deleted === true ? [] : (document?.deny ?? [])).map((entry) => [entry.match, entry]));
  } else {
    held = await readDenyList(deny, name, (error, entry) => skipped.onBadDenyEntry(-1, error, entry));
  }
  const next = plan([...held.values()], wanted, flags.replace === true, now);
  const kept = new Set(next.deny.map((entry) => entry.match));
  // The entries of the next list the store does not hold as they are (new, or replacing an expired one).
  const add = next.deny.filter((entry) => held.get(entry.match) !== entry);
  const remove = new Set([...held.keys()].filter((match) => !kept.has(match)));
  let badRemoved = 0;
  if (flags.replace === true) {
    // An entry that is not valid is not in the file either: --replace leaves none of them.
    for (const bad of skipped.entries) {
      if (bad.match === undefined || wanted.has(bad.match) || remove.has(bad.match)) continue;
      remove.add(bad.match);
      badRemoved++;
    }
  }
  const counted = { ...next, removed: next.removed + badRemoved };
  const warning = skippedWarning(skipped.entries, name, before !== undefined);
  if (flags.dryRun === true || (add.length === 0 && remove.size === 0)) return { plan: counted, version: before, written: false, warning };
  if (add.length > 0) await addDenyEntries(source, name, add, { now });
  if (remove.size > 0) await removeDenyEntries(source, name, [...remove]);
  // The version after the last change: read, since a removal answers only how many entries it held.
  const after = (await deny.readChanges(name, undefined)).version;
  return { plan: counted, version: after, written: true, warning };
}

/**
 * The stored document alone, its `deny` field as stored: core's readLimiterConfig over a view of the source without
 * its structure (which readLimiterConfig would read whole, and which holds nothing yet when this is called).
 */
function readDocumentAlone(
  source: ConfigSource,
  name: string,
  onBadDenyEntry: (index: number, error: SluiceError, entry: unknown) => void,
): Promise<LimiterConfig | undefined> {
  const documentOnly: ConfigSource = {
    read: (key) => source.read(key),
    write: () => Promise.reject(new Error('not used: a read')),
    remove: () => Promise.reject(new Error('not used: a read')),
  };
  return readLimiterConfig(documentOnly, name, { onBadDenyEntry });
}
