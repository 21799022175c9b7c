/**
 * The runtime configuration document: one JSON document per limiter name, kept in the shared store, holds the
 * rules, the mode (the kill switch and dark launches) and per-identity quotas, so one write changes every instance
 * of a fleet without a restart. This file is the document alone: its type, and the one check that parses it and
 * builds its rules, used alike by writers (before they store it) and by `watchConfig` (after it reads it).
 *
 * The document, version 1:
 *   { "version": 1, "revision": 7, "updatedAt": 1767225600000,
 *     "rules": [{ "algorithm": "gcra", "limit": 10, "period": "1s" }],   optional: absent = the code's rules
 *     "mode": "shadow",                                                  optional: absent = the code's mode
 *     "quotas": { "acme": [{ "algorithm": "gcra", "limit": 100, "period": "1s" }] },   optional
 *     "deny": [{ "match": "203.0.113.0/24", "until": 1767229200000, "reason": "scraper" }],  optional (deny/entries.ts)
 *     "denyMode": "shadow" }                                             optional: absent = the code's deny mode
 * Rules are rule specs (algorithms/rule-spec.ts), built by the factories themselves, so the store accepts exactly what code
 * accepts. `revision` counts writes (config/writers.ts).
 *
 * A document deleted on purpose (deleteLimiterConfig, `sluice config clear`) is a tombstone, not a missing key:
 *   { "version": 1, "revision": 8, "updatedAt": 1767225600000, "deleted": true }
 * Instances go back to their code's configuration on it, while a document that is simply gone (a store restarted
 * empty) leaves them on the last configuration they applied (config/watch-config.ts).
 */
import type { DenyMode, LimiterMode } from '../limiter/types.js';
import { checkDenyList, type DenyEntry } from '../deny/entries.js';
import { describe } from '../shared/describe.js';
import { SluiceError } from '../shared/errors.js';
import { ruleFromSpec, type RuleSpec } from '../algorithms/rule-spec.js';
import type { Rule } from '../algorithms/rules.js';
import { modeOption, rejectUnknownOptions } from '../shared/validate.js';

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
  /** Rules for single identities, over the limiter's rules (`configure({ quotas })`). */
  readonly quotas?: Readonly<Record<string, readonly RuleSpec[]>>;
  /** Identities and IP ranges refused outright by the HTTP layer (403), replacing the code's (`configure({ deny })`). */
  readonly deny?: readonly DenyEntry[];
  /**
   * Replaces the code's deny mode when present: the deny list's own switch (`off`, `shadow`, `enforce`), apart from
   * `mode`, so the kill switch does not lift the list and a new list can be dark-launched.
   */
  readonly denyMode?: DenyMode;
  /** A tombstone: an operator deleted the configuration on purpose, and instances return to their code's. Holds no other field. */
  readonly deleted?: true;
}

/** A document checked and its rules built: what the watcher applies. */
export interface CompiledConfig {
  readonly document: LimiterConfig;
  readonly rules: readonly Rule[] | undefined;
  readonly mode: LimiterMode | undefined;
  /** The quotas that are valid (all of them, when compiled strictly). */
  readonly quotas: ReadonlyMap<string, readonly Rule[]>;
  /** The deny entries that are valid (all of them, when compiled strictly); undefined when the document has none. */
  readonly deny: readonly DenyEntry[] | undefined;
  readonly denyMode: DenyMode | undefined;
  /** The document is a tombstone (deleted on purpose). */
  readonly deleted: boolean;
}

/** Where a lenient read reports what it leaves out; without them the first problem throws. */
export interface CompileProblems {
  /** One identity's quota is not valid. */
  onBadQuota?: (identity: string, error: SluiceError) => void;
  /** One entry of `deny` (at `index`, `entry` as given) is not valid. */
  onBadDenyEntry?: (index: number, error: SluiceError, entry: unknown) => void;
}

const FIELDS = ['version', 'revision', 'updatedAt', 'rules', 'mode', 'quotas', 'deny', 'denyMode', 'deleted'];
/** What a tombstone may hold besides `deleted`. */
const TOMBSTONE_FIELDS = ['version', 'revision', 'updatedAt', 'deleted'];

/**
 * Checks a stored document (its text, or the parsed object) and returns it. The first problem throws a
 * SluiceError (INVALID_OPTION) that names the field and what is accepted, e.g.
 * `quotas["acme"][0]: gcra: limit must be a positive integer, got -1`.
 */
export function parseLimiterConfig(input: unknown): LimiterConfig {
  return compileLimiterConfig(input).document;
}

/**
 * Checks a document and builds its rules. With `problems`, one identity's bad quota or one bad deny entry is
 * reported and left out instead of refusing the whole document (how the watcher reads: one bad part must not cost
 * the rest).
 */
export function compileLimiterConfig(input: unknown, problems: CompileProblems = {}): CompiledConfig {
  const { onBadQuota, onBadDenyEntry } = problems;
  let value = input;
  if (typeof input === 'string') {
    try {
      value = JSON.parse(input);
    } catch (error) {
      throw new SluiceError(
        'INVALID_OPTION',
        `the configuration must be a JSON object, got text that is not JSON (${(error as Error).message})`,
        { cause: error },
      );
    }
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    throw new SluiceError(
      'INVALID_OPTION',
      `the configuration must be an object such as { "version": 1, "mode": "off" }, got ${describe(value)}`,
    );
  }
  const doc = value as Record<string, unknown>;
  rejectUnknownOptions(doc, FIELDS, 'the configuration');
  if (doc.version !== 1) {
    throw new SluiceError(
      'INVALID_OPTION',
      `version must be 1 (the version this release of @sluice/core reads), got ${describe(doc.version)}`,
    );
  }
  const revision = doc.revision === undefined ? 0 : wholeNumber(doc.revision, 'revision');
  const updatedAt = doc.updatedAt === undefined ? 0 : wholeNumber(doc.updatedAt, 'updatedAt');
  if (doc.deleted !== undefined) {
    if (doc.deleted !== true)
      throw new SluiceError('INVALID_OPTION', `deleted must be true (a tombstone) or absent, got ${describe(doc.deleted)}`);
    const other = Object.keys(doc).find((field) => !TOMBSTONE_FIELDS.includes(field));
    if (other !== undefined) {
      throw new SluiceError(
        'INVALID_OPTION',
        `a deleted configuration ("deleted": true) holds only version, revision and updatedAt, got ${JSON.stringify(other)} too`,
      );
    }
    const document: LimiterConfig = { version: 1, revision, updatedAt, deleted: true };
    return { document, rules: undefined, mode: undefined, quotas: new Map(), deny: undefined, denyMode: undefined, deleted: true };
  }
  const rules = doc.rules === undefined ? undefined : buildRules(doc.rules, 'rules');
  const mode = doc.mode === undefined ? undefined : modeOption(doc.mode, 'mode');
  const denyMode = doc.denyMode === undefined ? undefined : modeOption(doc.denyMode, 'denyMode');
  const quotas = new Map<string, readonly Rule[]>();
  let quotaSpecs: Record<string, readonly RuleSpec[]> | undefined;
  if (doc.quotas !== undefined) {
    if (typeof doc.quotas !== 'object' || doc.quotas === null || Array.isArray(doc.quotas)) {
      throw new SluiceError(
        'INVALID_OPTION',
        `quotas must be an object from identity to rules, such as { "acme": [{ "algorithm": "gcra", "limit": 100, "period": "1s" }] }, got ${describe(doc.quotas)}`,
      );
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
  const deny = doc.deny === undefined ? undefined : checkDenyList(doc.deny, 'deny', onBadDenyEntry);
  const document: LimiterConfig = {
    version: 1,
    revision,
    updatedAt,
    ...(doc.rules === undefined ? {} : { rules: doc.rules as RuleSpec[] }),
    ...(mode === undefined ? {} : { mode }),
    ...(quotaSpecs === undefined ? {} : { quotas: quotaSpecs }),
    ...(deny === undefined ? {} : { deny }),
    ...(denyMode === undefined ? {} : { denyMode }),
  };
  return { document, rules, mode, quotas, deny, denyMode, deleted: false };
}

function buildRules(specs: unknown, field: string): readonly Rule[] {
  if (!Array.isArray(specs) || specs.length === 0) {
    throw new SluiceError(
      'INVALID_OPTION',
      `${field} must be a non-empty array of rules such as [{ "algorithm": "gcra", "limit": 10, "period": "1s" }], got ${describe(specs)}`,
    );
  }
  const rules = specs.map((spec, i) => ruleFromSpec(spec, `${field}[${i}]`));
  const ids = new Set<string>();
  for (const [i, rule] of rules.entries()) {
    if (ids.has(rule.id)) {
      throw new SluiceError(
        'INVALID_OPTION',
        `${field}[${i}]: another rule has the id ${JSON.stringify(rule.id)}; give one of them an explicit "id"`,
      );
    }
    ids.add(rule.id);
  }
  return rules;
}

function wholeNumber(value: unknown, field: string): number {
  if (typeof value !== 'number' || !Number.isSafeInteger(value) || value < 0) {
    throw new SluiceError('INVALID_OPTION', `${field} must be a non-negative integer, got ${describe(value)}`);
  }
  return value;
}
