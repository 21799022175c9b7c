/**
 * The writers' functions: read a limiter's stored configuration document (config-document.ts) through a
 * ConfigSource (config-source.ts), change it (rules, mode, one identity's quota, one deny entry) or delete it. Every write is
 * checked as instances will check it, so a bad rule is refused here, never stored. A source with `replace` (all
 * four of sluice's) writes only over the revision the writer read, so two writers at once both land, one after
 * the other; without it the last write wins.
 */
import { compileLimiterConfig, parseLimiterConfig, type LimiterConfig } from './config-document.js';
import type { ConfigSource } from './config-source.js';
import { checkDenyEntry, MAX_EPOCH_MS, type DenyEntry } from './deny-entries.js';
import { describe } from './describe.js';
import { SluiceError, isSluiceError } from './errors.js';
import type { DenyMode, LimiterMode } from './limiter-api.js';
import { ruleSpec, type RuleSpec } from './rule-spec.js';
import type { Rule } from './rules.js';
import { optionalFunction, rejectUnknownOptions } from './validate.js';

/** Rules as a writer may give them: specs (JSON) or rules made by the factories, one or a list. */
export type RulesInput = RuleSpec | Rule | readonly (RuleSpec | Rule)[];

/** What `writeLimiterConfig` changes; a field left out is kept as stored. */
export interface LimiterConfigChanges {
  /** New rules; `null` removes them from the document (instances use their code's rules). */
  rules?: RulesInput | null;
  /** New mode; `null` removes it (instances use their code's mode). */
  mode?: LimiterMode | null;
  /** Per identity: new rules, or `null` to remove that identity's quota. Other identities are kept. */
  quotas?: Readonly<Record<string, RulesInput | null>>;
  /** A new deny list, replacing the stored one; `null` removes it (instances use their code's). */
  deny?: readonly DenyEntry[] | null;
  /** The deny list's own mode; `null` removes it (instances use their code's, `enforce` by default). */
  denyMode?: DenyMode | null;
}

/** Options of `addDenyEntry`. */
export interface AddDenyEntryOptions {
  /** Epoch ms: the entry's `addedAt` when it has none, and what decides which entries have expired. @default Date.now() */
  now?: number;
  /** The most entries the list may hold; an addition past it is refused. @default 100_000 */
  maxEntries?: number;
}

/** Options of `readLimiterConfig`. */
export interface ReadLimiterConfigOptions {
  /**
   * Called with each deny entry that is not valid (written by hand, or by another version), which is then left out
   * of the document returned, as instances leave it out; `entry` is the entry as stored. Without it, such an entry
   * makes the read throw.
   */
  onBadDenyEntry?: (index: number, error: SluiceError, entry: unknown) => void;
}

/**
 * The stored document, checked; undefined when there is none. A stored document that is not valid throws; with
 * `onBadDenyEntry`, a bad deny entry is reported and left out instead (anything else still throws).
 * @example const config = await readLimiterConfig(source, 'api', { onBadDenyEntry: (i, error) => console.warn(error.message) })
 */
export async function readLimiterConfig(
  source: ConfigSource,
  name: string,
  options: ReadLimiterConfigOptions = {},
): Promise<LimiterConfig | undefined> {
  if (typeof options !== 'object' || options === null) {
    throw new SluiceError('INVALID_OPTION', `readLimiterConfig: options must be an object, got ${describe(options)}`);
  }
  rejectUnknownOptions(options, ['onBadDenyEntry'], 'readLimiterConfig');
  const onBadDenyEntry = optionalFunction(options.onBadDenyEntry, 'readLimiterConfig: onBadDenyEntry', '(index, error, entry) => void');
  const text = await source.read(checkName(name));
  if (text === undefined || text === null) return undefined;
  try {
    return compileLimiterConfig(text, onBadDenyEntry === undefined ? {} : { onBadDenyEntry }).document;
  } catch (error) {
    const message = isSluiceError(error) ? error.detail : String((error as Error)?.message ?? error);
    throw new SluiceError(
      'INVALID_OPTION',
      `the stored configuration of ${JSON.stringify(name)} is not valid (instances ignore it and keep their last good one): ${message}`,
      { cause: error },
    );
  }
}

/** The stored document as a writer starts from, and the `match` of each deny entry left out of it. */
interface ReadForWrite {
  readonly current: LimiterConfig | undefined;
  readonly dropped: ReadonlySet<unknown>;
}

/**
 * The stored document as a writer starts from: read as instances read it, so a deny entry they ignore (written by
 * hand, or by another version) is left out rather than blocking every writer, `deny remove` included; the next
 * write stores the list without it. Anything else that is not valid throws, as readLimiterConfig does.
 */
async function readForWrite(source: ConfigSource, name: string): Promise<ReadForWrite> {
  const dropped = new Set<unknown>();
  const onBadDenyEntry = (_index: number, _error: SluiceError, entry: unknown) =>
    void dropped.add(typeof entry === 'object' && entry !== null ? (entry as { match?: unknown }).match : undefined);
  return { current: await readLimiterConfig(source, name, { onBadDenyEntry }), dropped };
}

/**
 * Reads the document, applies `changes`, checks the result as instances will and writes it with the next
 * revision: a bad rule is refused here, never stored. Returns what was written.
 * @example await writeLimiterConfig(source, 'api', { mode: 'off' })
 */
export async function writeLimiterConfig(source: ConfigSource, name: string, changes: LimiterConfigChanges): Promise<LimiterConfig> {
  if (typeof changes !== 'object' || changes === null || Array.isArray(changes)) {
    throw new SluiceError(
      'INVALID_OPTION',
      `writeLimiterConfig: changes must be an object such as { mode: 'off' }, got ${describe(changes)}`,
    );
  }
  rejectUnknownOptions(changes, ['rules', 'mode', 'quotas', 'deny', 'denyMode'], 'writeLimiterConfig');
  if (changes.quotas !== undefined && (typeof changes.quotas !== 'object' || changes.quotas === null || Array.isArray(changes.quotas))) {
    throw new SluiceError(
      'INVALID_OPTION',
      `writeLimiterConfig: quotas must be an object from identity to rules (or null to remove one), got ${describe(changes.quotas)}`,
    );
  }
  const written = await updateLimiterConfig(source, name, 'writeLimiterConfig', (current) => applyChanges(current, changes));
  return written!;
}

/**
 * The compare-and-set loop every writer shares: reads the document, asks `edit` for the next one (undefined: no
 * change, nothing is written) and writes it over the revision read; when another writer got in between, reads and
 * edits again. Returns what was written, or undefined when `edit` asked for no change.
 */
async function updateLimiterConfig(
  source: ConfigSource,
  name: string,
  caller: string,
  edit: (current: LimiterConfig | undefined, dropped: ReadonlySet<unknown>) => LimiterConfig | undefined,
): Promise<LimiterConfig | undefined> {
  for (let attempt = 1; ; attempt++) {
    const { current, dropped } = await readForWrite(source, name);
    const document = edit(current, dropped);
    if (document === undefined) return undefined;
    const text = JSON.stringify(document);
    if (source.replace === undefined) {
      await source.write(name, text);
      return document;
    }
    if (await source.replace(name, current?.revision ?? 0, text)) return document;
    if (attempt < MAX_WRITE_ATTEMPTS) {
      // Another writer got in between: read again after a jittered pause, so that a crowd of writers spreads out.
      await new Promise<void>((resolve) => timers.setTimeout(resolve, Math.random() * Math.min(50, 2 ** attempt)));
    } else {
      throw new SluiceError(
        'STORE_ERROR',
        `${caller}: the configuration of ${JSON.stringify(name)} changed under this write ${MAX_WRITE_ATTEMPTS} times in a row (other writers); nothing was written, try again`,
      );
    }
  }
}

const timers = globalThis as unknown as { setTimeout(callback: () => void, ms: number): unknown };

/** Writers that lose the compare and set read again and retry, this many times in all (about 3 s of pauses at most). */
const MAX_WRITE_ATTEMPTS = 64;

/** The next document: `current` with `changes` applied, the next revision, checked as instances will check it. */
function applyChanges(current: LimiterConfig | undefined, changes: LimiterConfigChanges): LimiterConfig {
  const next = nextRevision(current, Date.now());
  if (changes.rules === null) delete next.rules;
  else if (changes.rules !== undefined) next.rules = specsOf(changes.rules);
  if (changes.mode === null) delete next.mode;
  else if (changes.mode !== undefined) next.mode = changes.mode;
  if (changes.quotas !== undefined) {
    const quotas: Record<string, unknown> = { ...current?.quotas };
    for (const [identity, rules] of Object.entries(changes.quotas)) {
      if (rules === null) delete quotas[identity];
      else quotas[identity] = specsOf(rules);
    }
    if (Object.keys(quotas).length === 0) delete next.quotas;
    else next.quotas = quotas;
  }
  if (changes.deny === null) delete next.deny;
  else if (changes.deny !== undefined) next.deny = changes.deny;
  if (changes.denyMode === null) delete next.denyMode;
  else if (changes.denyMode !== undefined) next.denyMode = changes.denyMode;
  return parseLimiterConfig(next);
}

/** `current` as the start of the next revision (not yet checked). */
function nextRevision(current: LimiterConfig | undefined, now: number): Record<string, unknown> {
  // A write over a tombstone (a deleted configuration) starts a document again, from the tombstone's revision.
  return { ...current, version: 1, revision: (current?.revision ?? 0) + 1, updatedAt: now, deleted: undefined };
}

/**
 * Deletes the configuration on purpose: writes a tombstone (`{ "deleted": true }`, the next revision), on which every
 * instance goes back to the configuration its code gave. A document that is simply gone (a store restarted empty)
 * is not a deletion: instances keep what they applied (watchConfig). A stored document that is not valid is
 * written over.
 */
export async function deleteLimiterConfig(source: ConfigSource, name: string): Promise<void> {
  const tombstone = (revision: number) => ({ version: 1, revision, updatedAt: Date.now(), deleted: true }) as const;
  try {
    await updateLimiterConfig(source, checkName(name), 'deleteLimiterConfig', (current) => tombstone((current?.revision ?? 0) + 1));
  } catch (error) {
    if (!isSluiceError(error) || error.code !== 'INVALID_OPTION') throw error;
    // Not valid, so without a revision to compare: the way out is to write over it (a deletion is meant to win).
    await source.write(name, JSON.stringify(tombstone(1)));
  }
}

/** Sets the rules every instance uses (`null`: their code's again). */
export async function setConfigRules(source: ConfigSource, name: string, rules: RulesInput | null): Promise<LimiterConfig> {
  return writeLimiterConfig(source, name, { rules });
}

/** Sets the mode: `'off'` is the kill switch, `'shadow'` a dark launch, `'enforce'` limits (`null`: the code's mode). */
export async function setConfigMode(source: ConfigSource, name: string, mode: LimiterMode | null): Promise<LimiterConfig> {
  return writeLimiterConfig(source, name, { mode });
}

/**
 * Sets the deny list's mode, apart from the limiter's: `'shadow'` reports listed clients and serves them (a new
 * list's dark launch), `'off'` ignores the list, `'enforce'` refuses them (`null`: the code's deny mode).
 */
export async function setDenyMode(source: ConfigSource, name: string, denyMode: DenyMode | null): Promise<LimiterConfig> {
  return writeLimiterConfig(source, name, { denyMode });
}

/** Sets one identity's quota: its rules replace the limiter's for that identity alone. */
export async function setQuota(source: ConfigSource, name: string, identity: string, rules: RulesInput): Promise<LimiterConfig> {
  return writeLimiterConfig(source, name, { quotas: { [checkIdentity(identity)]: rules } });
}

/** Removes one identity's quota: it goes back to the limiter's rules. */
export async function removeQuota(source: ConfigSource, name: string, identity: string): Promise<LimiterConfig> {
  return writeLimiterConfig(source, name, { quotas: { [checkIdentity(identity)]: null } });
}

/**
 * Adds an entry to the deny list, or replaces the entry with the same `match`; expired entries (`until` at or
 * before `now`, as the HTTP layer reads them) are dropped on the way. Refuses to grow the list past `maxEntries`. Returns what was written.
 * @example await addDenyEntry(source, 'api', { match: '203.0.113.0/24', until: Date.now() + 3_600_000, reason: 'scraper' })
 */
export async function addDenyEntry(
  source: ConfigSource,
  name: string,
  entry: DenyEntry,
  options: AddDenyEntryOptions = {},
): Promise<LimiterConfig> {
  return addEntries(source, name, [entry], options, 'addDenyEntry', 'entry');
}

/**
 * `addDenyEntry` for several entries in one compare-and-set write (one document revision, so every watcher reads
 * and compiles the list once for all of them). A later entry with the same `match` as an earlier one wins.
 * @example await addDenyEntries(source, 'api', [{ match: 'user:1', until }, { match: 'user:2', until }])
 */
export async function addDenyEntries(
  source: ConfigSource,
  name: string,
  entries: readonly DenyEntry[],
  options: AddDenyEntryOptions = {},
): Promise<LimiterConfig> {
  if (!Array.isArray(entries) || entries.length === 0) {
    throw new SluiceError('INVALID_OPTION', `addDenyEntries: entries must be a non-empty array of deny entries, got ${describe(entries)}`);
  }
  return addEntries(source, name, entries, options, 'addDenyEntries', 'entries');
}

async function addEntries(
  source: ConfigSource,
  name: string,
  entries: readonly DenyEntry[],
  options: AddDenyEntryOptions,
  caller: string,
  field: string,
): Promise<LimiterConfig> {
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
  const written = await updateLimiterConfig(source, checkName(name), caller, (current) => {
    const list = (current?.deny ?? []).filter((kept) => kept.until === undefined || kept.until > now);
    // One or a few entries (deny add): a scan each, instead of a Map of the whole list built for one lookup.
    const at = added.length <= FEW_ADDED ? undefined : new Map(list.map((kept, i) => [kept.match, i]));
    for (const entry of added) {
      const found = at === undefined ? list.findIndex((kept) => kept.match === entry.match) : (at.get(entry.match) ?? -1);
      const i = found === -1 ? undefined : found;
      if (i !== undefined) {
        list[i] = entry;
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
  return written!;
}

/**
 * Removes the deny entry with this `match` (exactly as it was added); answers whether there was one. An entry that
 * is not valid (instances ignore it) is removed by its `match` too, with every other such entry: the list written
 * holds only valid entries.
 */
export async function removeDenyEntry(source: ConfigSource, name: string, match: string): Promise<boolean> {
  if (typeof match !== 'string' || match.length === 0) {
    throw new SluiceError('INVALID_OPTION', `removeDenyEntry: match must be the entry's match, a non-empty string, got ${describe(match)}`);
  }
  const written = await updateLimiterConfig(source, checkName(name), 'removeDenyEntry', (current, dropped) => {
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
 * The next document with `list` as its deny list (none when it is empty), checked as instances will check it. The
 * list's entries are checked already (read from the stored document, or given to the writer and checked one by one)
 * and their matches are distinct, so they are not checked and copied a second time: on a list of 100,000 entries
 * that second pass was a third of a write's time. The rest of the document is checked as every writer checks it.
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

/** The deny list's default bound: a list a watcher reads whole on every change must stay a few megabytes. */
const DEFAULT_MAX_DENY_ENTRIES = 100_000;

/** Rules as specs: a factory's rule is written out with ruleSpec; a spec is kept as given (checked later). */
function specsOf(input: RulesInput): unknown[] {
  const list = (Array.isArray(input) ? input : [input]) as unknown[];
  return list.map((rule) => (isRule(rule) ? ruleSpec(rule) : rule));
}

function isRule(value: unknown): value is Rule {
  return typeof value === 'object' && value !== null && 'params' in value && typeof (value as { params: unknown }).params === 'object';
}

function checkName(name: unknown): string {
  if (typeof name !== 'string' || name.length === 0) {
    throw new SluiceError('INVALID_OPTION', `name must be the limiter's name, a non-empty string, got ${describe(name)}`);
  }
  return name;
}

function checkIdentity(identity: unknown): string {
  if (typeof identity !== 'string' || identity.length === 0) {
    throw new SluiceError('INVALID_OPTION', `identity must be a non-empty string, got ${describe(identity)}`);
  }
  return identity;
}
