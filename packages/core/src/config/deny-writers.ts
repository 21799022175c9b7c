/**
 * The deny list's writers. Where the source keeps the list in a structure of its own (`source.deny`,
 * deny/source.ts; all four of sluice's sources), a write is one change of the entries it names: adding an entry
 * to a list of 100,000 sends and stores that entry, and every instance applies that entry. Where it does not (a
 * source written for an older release), the list is the document's `deny` field, rewritten whole by compare and set.
 *
 * A document that still holds a `deny` field (written by an older release) has its entries moved into the
 * structure by the first write, and the field dropped; a tombstone (a configuration deleted on purpose) becomes
 * a document again, since a new entry means the list is wanted.
 */
import { readForWrite, updateLimiterConfig, nextRevision } from './writers.js';
import { readDenyList } from './deny-read.js';
import { parseLimiterConfig, type LimiterConfig } from './document.js';
import type { ConfigSource } from './source.js';
import { checkDenyEntry, MAX_EPOCH_MS, type DenyEntry } from '../deny/entries.js';
import { DENY_CHANGE_MAX, type DenyListSource, type DenyListVersion } from '../deny/source.js';
import { describe } from '../shared/describe.js';
import { SluiceError } from '../shared/errors.js';
import { nameOption, rejectUnknownOptions } from '../shared/validate.js';

/** Options of `addDenyEntry`. */
export interface AddDenyEntryOptions {
  /** Epoch ms: the entry's `addedAt` when it has none, and what decides which entries have expired. @default Date.now() */
  now?: number;
  /**
   * The most entries the document's list may hold, where the list is the document's field; an addition past it is
   * refused. A source's own structure has no such bound: its cost per entry is stated in core's README. @default 100_000
   */
  maxEntries?: number;
}

/** What a deny list write did. */
export interface DenyWriteResult {
  /** The entries as stored (`addedAt` filled in). */
  readonly entries: readonly DenyEntry[];
  /** The structure's version the write made, where the source keeps the list in a structure of its own. */
  readonly version?: DenyListVersion;
  /** The document's revision written, where the list is the document's field. */
  readonly revision?: number;
  /** Entries in the document's list after the write, where the list is the document's field. */
  readonly size?: number;
}

/**
 * Adds an entry to the deny list, or replaces the entry with the same `match`. Returns what was written.
 * @example await addDenyEntry(source, 'api', { match: '203.0.113.0/24', until: Date.now() + 3_600_000, reason: 'scraper' })
 */
export async function addDenyEntry(
  source: ConfigSource,
  name: string,
  entry: DenyEntry,
  options: AddDenyEntryOptions = {},
): Promise<DenyWriteResult> {
  return addEntries(source, name, [entry], options, 'addDenyEntry', 'entry');
}

/**
 * `addDenyEntry` for several entries: one change of the structure per DENY_CHANGE_MAX entries (or one document
 * revision). A later entry with the same `match` as an earlier one wins.
 * @example await addDenyEntries(source, 'api', [{ match: 'user:1', until }, { match: 'user:2', until }])
 */
export async function addDenyEntries(
  source: ConfigSource,
  name: string,
  entries: readonly DenyEntry[],
  options: AddDenyEntryOptions = {},
): Promise<DenyWriteResult> {
  if (!Array.isArray(entries) || entries.length === 0) {
    throw new SluiceError('INVALID_OPTION', `addDenyEntries: entries must be a non-empty array of deny entries, got ${describe(entries)}`);
  }
  return addEntries(source, name, entries, options, 'addDenyEntries', 'entries');
}

/**
 * Removes the deny entry with this `match` (exactly as it was added); answers whether there was one. An entry that
 * is not valid (instances ignore it) is removed by its `match` too.
 */
export async function removeDenyEntry(source: ConfigSource, name: string, match: string): Promise<boolean> {
  if (typeof match !== 'string' || match.length === 0) {
    throw new SluiceError('INVALID_OPTION', `removeDenyEntry: match must be the entry's match, a non-empty string, got ${describe(match)}`);
  }
  nameOption(name, 'name');
  if (source.deny !== undefined) {
    const moved = await prepareStructure(source, source.deny, name);
    const answer = await source.deny.change(name, { remove: [match], expireBefore: Date.now() });
    return answer.removed === undefined ? true : answer.removed > 0 || moved.has(match);
  }
  const written = await updateLimiterConfig(source, name, 'removeDenyEntry', (current, dropped) => {
    const list = current?.deny ?? [];
    if (!list.some((entry) => entry.match === match) && !dropped.has(match)) return undefined;
    return nextWithDenyList(
      nextRevision(current, Date.now()),
      list.filter((entry) => entry.match !== match),
    );
  });
  return written !== undefined;
}

/**
 * Removes the entries with these matches; answers how many the list held (where the source can say; else the
 * number asked). Where the list is in the source's own structure, one change per DENY_CHANGE_MAX matches.
 */
export async function removeDenyEntries(source: ConfigSource, name: string, matches: readonly string[]): Promise<number> {
  if (!Array.isArray(matches) || matches.some((match) => typeof match !== 'string' || match.length === 0)) {
    throw new SluiceError(
      'INVALID_OPTION',
      `removeDenyEntries: matches must be an array of non-empty match strings, got ${describe(matches)}`,
    );
  }
  nameOption(name, 'name');
  if (matches.length === 0) return 0;
  if (source.deny !== undefined) {
    const moved = await prepareStructure(source, source.deny, name);
    let removed = 0;
    for (let i = 0; i < matches.length; i += DENY_CHANGE_MAX) {
      const part = matches.slice(i, i + DENY_CHANGE_MAX);
      const answer = await source.deny.change(name, { remove: part, expireBefore: Date.now() });
      removed += answer.removed ?? part.length;
    }
    // Entries moved from an old document and removed at once were held too.
    return Math.min(matches.length, removed + (moved.size === 0 ? 0 : matches.filter((match) => moved.has(match)).length));
  }
  const gone = new Set(matches);
  let removed = 0;
  await updateLimiterConfig(source, name, 'removeDenyEntries', (current, dropped) => {
    const list = current?.deny ?? [];
    const kept = list.filter((entry) => !gone.has(entry.match));
    removed = list.length - kept.length;
    if (removed === 0 && !matches.some((match) => dropped.has(match))) return undefined;
    return nextWithDenyList(nextRevision(current, Date.now()), kept);
  });
  return removed;
}

/**
 * Makes the deny list hold exactly `entries` (checked first, the first bad one throws), changing only what differs:
 * no moment holds fewer of the entries both lists share. Where the list is the document's field, one revision.
 */
export async function replaceDenyEntries(source: ConfigSource, name: string, entries: readonly DenyEntry[]): Promise<DenyWriteResult> {
  nameOption(name, 'name');
  const wanted = new Map<string, DenyEntry>();
  for (const [i, entry] of entries.entries()) {
    const checked = checkDenyEntry(entry, `replaceDenyEntries: entries[${i}]`);
    wanted.set(checked.match, checked);
  }
  if (source.deny === undefined) {
    const written = await updateLimiterConfig(source, name, 'replaceDenyEntries', (current) =>
      nextWithDenyList(nextRevision(current, Date.now()), [...wanted.values()]),
    );
    return { entries: [...wanted.values()], revision: written!.revision, size: written!.deny?.length ?? 0 };
  }
  const deny = source.deny;
  await prepareStructure(source, deny, name);
  const held = await readDenyList(deny, name);
  const remove = [...held.keys()].filter((match) => !wanted.has(match));
  const add = [...wanted.values()].filter((entry) => !sameEntry(held.get(entry.match), entry));
  const version = await sendChanges(deny, name, add, remove);
  return { entries: [...wanted.values()], ...(version === undefined ? {} : { version }) };
}

async function addEntries(
  source: ConfigSource,
  name: string,
  entries: readonly DenyEntry[],
  options: AddDenyEntryOptions,
  caller: string,
  field: string,
): Promise<DenyWriteResult> {
  if (typeof options !== 'object' || options === null) {
    throw new SluiceError('INVALID_OPTION', `${caller}: options must be an object such as { maxEntries: 1000 }, got ${describe(options)}`);
  }
  rejectUnknownOptions(options, ['now', 'maxEntries'], caller);
  const now = options.now ?? Date.now();
  if (!Number.isSafeInteger(now) || now < 0 || now > MAX_EPOCH_MS) {
    throw new SluiceError('INVALID_OPTION', `${caller}: now must be an integer from 0 to ${MAX_EPOCH_MS} (epoch ms), got ${describe(now)}`);
  }
  const maxEntries = options.maxEntries ?? DEFAULT_MAX_DENY_ENTRIES;
  if (!Number.isSafeInteger(maxEntries) || maxEntries < 1) {
    throw new SluiceError('INVALID_OPTION', `${caller}: maxEntries must be a positive integer, got ${describe(maxEntries)}`);
  }
  nameOption(name, 'name');
  const added = entries.map((entry, i) => {
    const where = entries.length === 1 && field === 'entry' ? field : `${field}[${i}]`;
    const checked = checkDenyEntry(entry, `${caller}: ${where}`);
    if (checked.until !== undefined && checked.until <= now) {
      throw new SluiceError(
        'INVALID_OPTION',
        `${caller}: ${where}.until (${checked.until}) has already passed (now is ${now}); give a time to come, or leave until out for a block until removed`,
      );
    }
    return checked.addedAt === undefined ? { ...checked, addedAt: now } : checked;
  });
  if (source.deny !== undefined) {
    await prepareStructure(source, source.deny, name);
    const version = await sendChanges(source.deny, name, added, [], now);
    return { entries: added, ...(version === undefined ? {} : { version }) };
  }
  const written = await updateLimiterConfig(source, name, caller, (current) => {
    const list = (current?.deny ?? []).filter((kept) => kept.until === undefined || kept.until > now);
    // One or a few entries (deny add): a scan each, instead of a Map of the whole list built for one lookup.
    const at = added.length <= FEW_ADDED ? undefined : new Map(list.map((kept, i) => [kept.match, i]));
    for (const entry of added) {
      const found = at === undefined ? list.findIndex((kept) => kept.match === entry.match) : (at.get(entry.match) ?? -1);
      if (found !== -1) {
        list[found] = entry;
        continue;
      }
      if (list.length >= maxEntries) {
        throw new SluiceError(
          'INVALID_OPTION',
          `${caller}: the deny list of ${JSON.stringify(name)} already holds ${list.length} entries, the most maxEntries (${maxEntries}) allows; remove some, or block a whole range with one CIDR entry, or raise maxEntries`,
        );
      }
      at?.set(entry.match, list.length);
      list.push(entry);
    }
    return nextWithDenyList(nextRevision(current, now), list);
  });
  return { entries: added, revision: written!.revision, size: written!.deny?.length ?? 0 };
}

/**
 * Before a write to the structure: a document left by an older release with a `deny` field has its entries moved
 * into the structure and the field dropped; a tombstone becomes a document again. Answers the matches moved.
 * Costs one read of the (small) document when there is nothing to do.
 */
async function prepareStructure(source: ConfigSource, deny: DenyListSource, name: string): Promise<ReadonlySet<string>> {
  const { current } = await readForWrite(source, name);
  if (current === undefined) {
    // A document, even an empty one, names the limiter: `sluice config export`, `config get` and the dashboard find
    // limiters by their documents, and a list without one would be left out of a backup.
    await updateLimiterConfig(source, name, 'the deny list writer', (latest) =>
      latest === undefined ? parseLimiterConfig(nextRevision(undefined, Date.now())) : undefined,
    );
    return new Set();
  }
  if (current.deny === undefined && current.deleted !== true) return new Set();
  const legacy = current.deny ?? [];
  if (legacy.length > 0) await sendChanges(deny, name, legacy, []);
  await updateLimiterConfig(source, name, 'the deny list writer', (latest) => {
    if (latest === undefined || (latest.deny === undefined && latest.deleted !== true)) return undefined;
    const { deny: _moved, ...rest } = nextRevision(latest, Date.now());
    return parseLimiterConfig(rest);
  });
  return new Set(legacy.map((entry) => entry.match));
}

/** Sends additions and removals as changes of at most DENY_CHANGE_MAX entries each; answers the last version made. */
async function sendChanges(
  deny: DenyListSource,
  name: string,
  add: readonly DenyEntry[],
  remove: readonly string[],
  now = Date.now(),
): Promise<DenyListVersion | undefined> {
  // Each change also has the store drop entries that have expired (a hundred at most): temporary blocks do not pile up.
  let version: DenyListVersion | undefined;
  for (const part of parts(remove, (match) => match.length)) version = await deny.change(name, { remove: part, expireBefore: now });
  for (const part of parts(add, (entry) => entry.match.length + (entry.reason?.length ?? 0)))
    version = await deny.change(name, { add: part, expireBefore: now });
  return version;
}

/**
 * `items` in changes of at most DENY_CHANGE_MAX items and about DENY_CHANGE_BYTES of text each: a store may carry a
 * change's entries more than once in its request (Upstash takes at most a megabyte per request).
 */
function* parts<T>(items: readonly T[], size: (item: T) => number): Generator<T[]> {
  let part: T[] = [];
  let bytes = 0;
  for (const item of items) {
    const cost = size(item) + 64;
    if (part.length === DENY_CHANGE_MAX || (part.length > 0 && bytes + cost > DENY_CHANGE_BYTES)) {
      yield part;
      part = [];
      bytes = 0;
    }
    part.push(item);
    bytes += cost;
  }
  if (part.length > 0) yield part;
}

/** The text a change carries at most, about: entries are sent as their text and their match, so a request stays well under a megabyte. */
const DENY_CHANGE_BYTES = 200_000;

function sameEntry(a: DenyEntry | undefined, b: DenyEntry): boolean {
  return a !== undefined && a.until === b.until && a.reason === b.reason && a.addedAt === b.addedAt;
}

/**
 * The next document with `list` as its deny list (none when it is empty), checked as instances will check it. The
 * list's entries are checked already and their matches distinct, so they are not checked and copied a second time:
 * on a list of 100,000 entries that second pass was a third of a write's time.
 */
function nextWithDenyList(next: Record<string, unknown>, list: DenyEntry[]): LimiterConfig {
  const { deny: _replaced, ...rest } = next;
  const { denyMode, ...document } = parseLimiterConfig(rest);
  // The document's own field order: deny before denyMode.
  return {
    ...document,
    ...(list.length === 0 ? {} : { deny: Object.freeze(list) }),
    ...(denyMode === undefined ? {} : { denyMode }),
  };
}

/** Up to this many entries added at once are looked up by a scan of the list; more, through a Map of it. */
const FEW_ADDED = 8;

/** The document's deny list's default bound: a list a watcher reads whole on every change must stay a few megabytes. */
const DEFAULT_MAX_DENY_ENTRIES = 100_000;
