/**
 * The writers' functions: read a limiter's stored configuration document (config/document.ts) through a
 * ConfigSource (config/source.ts), change it (rules, mode, one identity's quota, one deny entry) or delete it. Every write is
 * checked as instances will check it, so a bad rule is refused here, never stored. A source with `replace` (all
 * four of sluice's) writes only over the revision the writer read, so two writers at once both land, one after
 * the other; without it the last write wins.
 */
import { compileLimiterConfig, parseLimiterConfig, type LimiterConfig } from './document.js';
import type { ConfigSource } from './source.js';
import { readDenyList } from './deny-read.js';
import type { DenyEntry } from '../deny/entries.js';
import { describe } from '../shared/describe.js';
import { SluiceError, isSluiceError } from '../shared/errors.js';
import type { DenyMode, LimiterMode } from '../limiter/types.js';
import { ruleSpec, type RuleSpec } from '../algorithms/rule-spec.js';
import type { Rule } from '../algorithms/rules.js';
import { nameOption, optionalFunction, rejectUnknownOptions } from '../shared/validate.js';
import { timers } from '../shared/timers.js';

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
  const document = await readDocument(source, name, onBadDenyEntry);
  if (document === undefined || source.deny === undefined || document.deleted === true) return document;
  // The list kept in the store's own structure, as the document's `deny` field, as instances apply it.
  const bad = (error: SluiceError, entry: unknown) => {
    if (onBadDenyEntry === undefined) throw error;
    onBadDenyEntry(-1, error, entry);
  };
  const entries = await readDenyList(source.deny, name, bad);
  const { deny: _field, denyMode, ...rest } = document;
  const deny = entries.size === 0 && document.deny !== undefined ? document.deny : [...entries.values()];
  return { ...rest, ...(deny.length === 0 ? {} : { deny }), ...(denyMode === undefined ? {} : { denyMode }) };
}

/** The stored document alone (its `deny` field as stored, none where the list is in the source's structure). */
async function readDocument(
  source: ConfigSource,
  name: string,
  onBadDenyEntry: ((index: number, error: SluiceError, entry: unknown) => void) | undefined,
): Promise<LimiterConfig | undefined> {
  const text = await source.read(nameOption(name, 'name'));
  if (text === undefined || text === null) return undefined;
  let document: LimiterConfig;
  try {
    document = compileLimiterConfig(text, onBadDenyEntry === undefined ? {} : { onBadDenyEntry }).document;
  } catch (error) {
    const message = isSluiceError(error) ? error.detail : String((error as Error)?.message ?? error);
    throw new SluiceError(
      'INVALID_OPTION',
      `the stored configuration of ${JSON.stringify(name)} is not valid (instances ignore it and keep their last good one): ${message}`,
      { cause: error },
    );
  }
  return document;
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
export async function readForWrite(source: ConfigSource, name: string): Promise<ReadForWrite> {
  const dropped = new Set<unknown>();
  const onBadDenyEntry = (_index: number, _error: SluiceError, entry: unknown) =>
    void dropped.add(typeof entry === 'object' && entry !== null ? (entry as { match?: unknown }).match : undefined);
  return { current: await readDocument(source, name, onBadDenyEntry), dropped };
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
  if (changes.deny !== undefined && source.deny !== undefined) {
    throw new SluiceError(
      'INVALID_OPTION',
      `writeLimiterConfig: deny: this source keeps the deny list in a structure of its own; change it with addDenyEntries, removeDenyEntry or replaceDenyEntries`,
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
export async function updateLimiterConfig(
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
export function nextRevision(current: LimiterConfig | undefined, now: number): Record<string, unknown> {
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
    await updateLimiterConfig(source, nameOption(name, 'name'), 'deleteLimiterConfig', (current) =>
      tombstone((current?.revision ?? 0) + 1),
    );
  } catch (error) {
    if (!isSluiceError(error) || error.code !== 'INVALID_OPTION') throw error;
    // Not valid, so without a revision to compare: the way out is to write over it (a deletion is meant to win).
    await source.write(name, JSON.stringify(tombstone(1)));
  }
  // The structure's entries go too, as one change: a list written after the deletion starts empty.
  if (source.deny !== undefined) await source.deny.change(name, { clear: true });
}

/** Sets the rules every instance uses (`null`: their code's again). */
export async function setLimiterRules(source: ConfigSource, name: string, rules: RulesInput | null): Promise<LimiterConfig> {
  return writeLimiterConfig(source, name, { rules });
}

/** Sets the mode: `'off'` is the kill switch, `'shadow'` a dark launch, `'enforce'` limits (`null`: the code's mode). */
export async function setLimiterMode(source: ConfigSource, name: string, mode: LimiterMode | null): Promise<LimiterConfig> {
  return writeLimiterConfig(source, name, { mode });
}

/**
 * Sets the deny list's mode, apart from the limiter's: `'shadow'` reports listed clients and serves them (a new
 * list's dark launch), `'off'` ignores the list, `'enforce'` refuses them (`null`: the code's deny mode).
 */
export async function setDenyListMode(source: ConfigSource, name: string, denyMode: DenyMode | null): Promise<LimiterConfig> {
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

/** Rules as specs: a factory's rule is written out with ruleSpec; a spec is kept as given (checked later). */
function specsOf(input: RulesInput): unknown[] {
  const list = (Array.isArray(input) ? input : [input]) as unknown[];
  return list.map((rule) => (isRule(rule) ? ruleSpec(rule) : rule));
}

function isRule(value: unknown): value is Rule {
  return typeof value === 'object' && value !== null && 'params' in value && typeof (value as { params: unknown }).params === 'object';
}

function checkIdentity(identity: unknown): string {
  if (typeof identity !== 'string' || identity.length === 0) {
    throw new SluiceError('INVALID_OPTION', `identity must be a non-empty string, got ${describe(identity)}`);
  }
  return identity;
}
