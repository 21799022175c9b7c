/**
 * Runtime configuration kept in the shared store: one JSON document per limiter name holds the rules,
 * the mode (the kill switch and dark launches) and per-identity quotas, so one write changes every instance of a
 * fleet without a restart. This file is the document, its validation, the contract a store implements to hold
 * it (`ConfigSource`) and the writers' functions; `watchConfig` (watch-config.ts) applies it to a limiter.
 *
 * The document, version 1:
 *   { "version": 1, "revision": 7, "updatedAt": 1767225600000,
 *     "rules": [{ "algorithm": "gcra", "limit": 10, "period": "1s" }],   optional: absent = the code's rules
 *     "mode": "shadow",                                                  optional: absent = the code's mode
 *     "quotas": { "acme": [{ "algorithm": "gcra", "limit": 100, "period": "1s" }] } }   optional
 * Rules are rule specs (rule-spec.ts), built by the factories themselves, so the store accepts exactly what code
 * accepts. `revision` counts writes. A source with `replace` (all four of sluice's) writes only over the revision
 * the writer read, so two writers at once both land, one after the other; without it the last write wins.
 */
import type { LimiterMode } from './limiter.js';
import { SluiceError, describe, isSluiceError } from './errors.js';
import { ruleFromSpec, ruleSpec, type RuleSpec } from './rule-spec.js';
import type { Rule } from './rules.js';
import { rejectUnknownOptions } from './validate.js';

/** The document a store holds under a limiter's name. */
export interface LimiterConfig {
  readonly version: 1;
  /** Writes so far: 1 for the first, one more for each after. */
  readonly revision: number;
  /** When it was last written, epoch ms. */
  readonly updatedAt: number;
  /** Replaces the code's rules when present. */
  readonly rules?: readonly RuleSpec[];
  /** Replaces the code's mode when present: `off` is the kill switch, `shadow` a dark launch. */
  readonly mode?: LimiterMode;
  /** Rules for single identities, over the limiter's rules (`configure({ overrides })`). */
  readonly quotas?: Readonly<Record<string, readonly RuleSpec[]>>;
}

/**
 * Where a store keeps the documents, one per limiter name. Any method may answer synchronously or with a promise.
 * `@sluice/redis`, `@sluice/upstash`, `@sluice/sqlite` and `@sluice/memory` each make one.
 */
export interface ConfigSource {
  /** The document's text, or undefined when none is stored. */
  read(name: string): string | undefined | PromiseLike<string | undefined>;
  /** Stores the text (already validated by the caller) and tells subscribers. */
  write(name: string, text: string): void | PromiseLike<void>;
  /** Deletes the document: instances go back to the configuration their code gave. */
  remove(name: string): void | PromiseLike<void>;
  /**
   * Compare and set: stores `text` (and tells subscribers) only if the stored document's `revision` is
   * `expectedRevision` (0: no document is stored), in one atomic step; answers whether it did. Writers use it
   * when present, so that two writers at once cannot lose one's change.
   */
  replace?(name: string, expectedRevision: number, text: string): boolean | PromiseLike<boolean>;
  /**
   * Calls `onChange` when the document may have changed (the watcher then reads it), where the store can push
   * (Redis pub/sub, the memory source). Returns the function that stops it. Without it the watcher's periodic
   * read is the only way a change arrives.
   */
  subscribe?(name: string, onChange: () => void): Unsubscribe | PromiseLike<Unsubscribe>;
}

export type Unsubscribe = () => void | PromiseLike<void>;

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
}

/** A document checked and its rules built: what the watcher applies. */
export interface CompiledConfig {
  readonly document: LimiterConfig;
  readonly rules: readonly Rule[] | undefined;
  readonly mode: LimiterMode | undefined;
  /** The quotas that are valid (all of them, when compiled strictly). */
  readonly quotas: ReadonlyMap<string, readonly Rule[]>;
}

const FIELDS = ['version', 'revision', 'updatedAt', 'rules', 'mode', 'quotas'];
const MODES: readonly string[] = ['enforce', 'shadow', 'off'];

/**
 * Checks a stored document (its text, or the parsed object) and returns it. The first problem throws a
 * SluiceError (INVALID_OPTION) that names the field and what is accepted, e.g.
 * `quotas["acme"][0]: gcra: limit must be a positive integer, got -1`.
 */
export function parseLimiterConfig(input: unknown): LimiterConfig {
  return compileLimiterConfig(input).document;
}

/**
 * Checks a document and builds its rules. With `onBadQuota`, one identity's bad quota is reported to it and left
 * out instead of refusing the whole document (how the watcher reads: a bad quota must not cost the rest).
 */
export function compileLimiterConfig(input: unknown, onBadQuota?: (identity: string, error: SluiceError) => void): CompiledConfig {
  let value = input;
  if (typeof input === 'string') {
    try {
      value = JSON.parse(input);
    } catch (error) {
      throw new SluiceError('INVALID_OPTION', `the configuration must be a JSON object, got text that is not JSON (${(error as Error).message})`, { cause: error });
    }
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    throw new SluiceError('INVALID_OPTION', `the configuration must be an object such as { "version": 1, "mode": "off" }, got ${describe(value)}`);
  }
  const doc = value as Record<string, unknown>;
  rejectUnknownOptions(doc, FIELDS, 'the configuration');
  if (doc.version !== 1) {
    throw new SluiceError('INVALID_OPTION', `version must be 1 (the version this release of @sluice/core reads), got ${describe(doc.version)}`);
  }
  const revision = doc.revision === undefined ? 0 : wholeNumber(doc.revision, 'revision');
  const updatedAt = doc.updatedAt === undefined ? 0 : wholeNumber(doc.updatedAt, 'updatedAt');
  const rules = doc.rules === undefined ? undefined : buildRules(doc.rules, 'rules');
  if (doc.mode !== undefined && (typeof doc.mode !== 'string' || !MODES.includes(doc.mode))) {
    throw new SluiceError('INVALID_OPTION', `mode must be 'enforce', 'shadow' or 'off', got ${describe(doc.mode)}`);
  }
  const mode = doc.mode as LimiterMode | undefined;
  const quotas = new Map<string, readonly Rule[]>();
  let quotaSpecs: Record<string, readonly RuleSpec[]> | undefined;
  if (doc.quotas !== undefined) {
    if (typeof doc.quotas !== 'object' || doc.quotas === null || Array.isArray(doc.quotas)) {
      throw new SluiceError('INVALID_OPTION', `quotas must be an object from identity to rules, such as { "acme": [{ "algorithm": "gcra", "limit": 100, "period": "1s" }] }, got ${describe(doc.quotas)}`);
    }
    quotaSpecs = {};
    for (const [identity, specs] of Object.entries(doc.quotas as Record<string, unknown>)) {
      try {
        const field = `quotas[${JSON.stringify(identity.slice(0, 64))}]`;
        if (identity.length === 0) throw new SluiceError('INVALID_OPTION', `quotas: an identity must be a non-empty string, got ""`);
        quotas.set(identity, buildRules(specs, field));
        quotaSpecs[identity] = specs as RuleSpec[];
      } catch (error) {
        if (onBadQuota === undefined || !(error instanceof SluiceError)) throw error;
        onBadQuota(identity, error);
      }
    }
  }
  const document: LimiterConfig = {
    version: 1,
    revision,
    updatedAt,
    ...(doc.rules === undefined ? {} : { rules: doc.rules as RuleSpec[] }),
    ...(mode === undefined ? {} : { mode }),
    ...(quotaSpecs === undefined ? {} : { quotas: quotaSpecs }),
  };
  return { document, rules, mode, quotas };
}

/** The stored document, checked; undefined when there is none. A stored document that is not valid throws. */
export async function readLimiterConfig(source: ConfigSource, name: string): Promise<LimiterConfig | undefined> {
  const text = await source.read(checkName(name));
  if (text === undefined || text === null) return undefined;
  try {
    return parseLimiterConfig(text);
  } catch (error) {
    const message = isSluiceError(error) ? error.detail : String((error as Error)?.message ?? error);
    throw new SluiceError('INVALID_OPTION', `the stored configuration of ${JSON.stringify(name)} is not valid (instances ignore it and keep their last good one): ${message}`, { cause: error });
  }
}

/**
 * Reads the document, applies `changes`, checks the result as instances will and writes it with the next
 * revision: a bad rule is refused here, never stored. Returns what was written.
 * @example await writeLimiterConfig(source, 'api', { mode: 'off' })
 */
export async function writeLimiterConfig(source: ConfigSource, name: string, changes: LimiterConfigChanges): Promise<LimiterConfig> {
  if (typeof changes !== 'object' || changes === null || Array.isArray(changes)) {
    throw new SluiceError('INVALID_OPTION', `writeLimiterConfig: changes must be an object such as { mode: 'off' }, got ${describe(changes)}`);
  }
  rejectUnknownOptions(changes, ['rules', 'mode', 'quotas'], 'writeLimiterConfig');
  if (changes.quotas !== undefined && (typeof changes.quotas !== 'object' || changes.quotas === null || Array.isArray(changes.quotas))) {
    throw new SluiceError('INVALID_OPTION', `writeLimiterConfig: quotas must be an object from identity to rules (or null to remove one), got ${describe(changes.quotas)}`);
  }
  for (let attempt = 1; ; attempt++) {
    const current = await readLimiterConfig(source, name);
    const document = applyChanges(current, changes);
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
        `writeLimiterConfig: the configuration of ${JSON.stringify(name)} changed under this write ${MAX_WRITE_ATTEMPTS} times in a row (other writers); nothing was written, try again`,
      );
    }
  }
}

const timers = globalThis as unknown as { setTimeout(callback: () => void, ms: number): unknown };

/** Writers that lose the compare and set read again and retry, this many times in all (about 3 s of pauses at most). */
const MAX_WRITE_ATTEMPTS = 64;

/** The next document: `current` with `changes` applied, the next revision, checked as instances will check it. */
function applyChanges(current: LimiterConfig | undefined, changes: LimiterConfigChanges): LimiterConfig {
  const next: Record<string, unknown> = { ...current, version: 1, revision: (current?.revision ?? 0) + 1, updatedAt: Date.now() };
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
  return parseLimiterConfig(next);
}

/** Deletes the document: every instance goes back to the configuration its code gave. */
export async function deleteLimiterConfig(source: ConfigSource, name: string): Promise<void> {
  await source.remove(checkName(name));
}

/** Sets the rules every instance uses (`null`: their code's again). */
export async function setConfigRules(source: ConfigSource, name: string, rules: RulesInput | null): Promise<LimiterConfig> {
  return writeLimiterConfig(source, name, { rules });
}

/** Sets the mode: `'off'` is the kill switch, `'shadow'` a dark launch, `'enforce'` limits (`null`: the code's mode). */
export async function setConfigMode(source: ConfigSource, name: string, mode: LimiterMode | null): Promise<LimiterConfig> {
  return writeLimiterConfig(source, name, { mode });
}

/** Sets one identity's quota: its rules replace the limiter's for that identity alone. */
export async function setQuota(source: ConfigSource, name: string, identity: string, rules: RulesInput): Promise<LimiterConfig> {
  return writeLimiterConfig(source, name, { quotas: { [checkIdentity(identity)]: rules } });
}

/** Removes one identity's quota: it goes back to the limiter's rules. */
export async function removeQuota(source: ConfigSource, name: string, identity: string): Promise<LimiterConfig> {
  return writeLimiterConfig(source, name, { quotas: { [checkIdentity(identity)]: null } });
}

function buildRules(specs: unknown, field: string): readonly Rule[] {
  if (!Array.isArray(specs) || specs.length === 0) {
    throw new SluiceError('INVALID_OPTION', `${field} must be a non-empty array of rules such as [{ "algorithm": "gcra", "limit": 10, "period": "1s" }], got ${describe(specs)}`);
  }
  const rules = specs.map((spec, i) => ruleFromSpec(spec, `${field}[${i}]`));
  const ids = new Set<string>();
  for (const [i, rule] of rules.entries()) {
    if (ids.has(rule.id)) {
      throw new SluiceError('INVALID_OPTION', `${field}[${i}]: another rule has the id ${JSON.stringify(rule.id)}; give one of them an explicit "id"`);
    }
    ids.add(rule.id);
  }
  return rules;
}

/** Rules as specs: a factory's rule is written out with ruleSpec; a spec is kept as given (checked later). */
function specsOf(input: RulesInput): unknown[] {
  const list = (Array.isArray(input) ? input : [input]) as unknown[];
  return list.map((rule) => (isRule(rule) ? ruleSpec(rule) : rule));
}

function isRule(value: unknown): value is Rule {
  return typeof value === 'object' && value !== null && 'params' in value && typeof (value as { params: unknown }).params === 'object';
}

function wholeNumber(value: unknown, field: string): number {
  if (typeof value !== 'number' || !Number.isSafeInteger(value) || value < 0) {
    throw new SluiceError('INVALID_OPTION', `${field} must be a non-negative integer, got ${describe(value)}`);
  }
  return value;
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
