/**
 * Checks of what a limiter is given: its name, rules and per-identity quotas at construction and in
 * `configure()`, and the options of each call. Every refusal names the field and what is accepted.
 */
import type { Operation } from '../algorithms/algorithm.js';
import { ALGORITHM_NAMES } from '../algorithms/names.js';
import { MAX_CLOCK_MS } from '../shared/clock.js';
import { durationOption, type DurationRange } from '../shared/duration.js';
import type { DenyLineage } from '../deny/lineage.js';
import { checkDenyList, isCheckedDenyList, sameDenyList, type DenyEntry } from '../deny/entries.js';
import { describe } from '../shared/describe.js';
import { SluiceError } from '../shared/errors.js';
import type { DenyMode, LimiterChanges, LimiterOptions, LimitOptions, ReserveOptions, TakeOptions } from './types.js';
import type { FailurePolicy } from '../store/failure-policy.js';
import type { Store } from '../store/store.js';
import type { Rule } from '../algorithms/rules.js';
import { clockOption, modeOption, optionalFunction, optionNames, rejectUnknownOptions } from '../shared/validate.js';

/** createLimiter's option names, checked against LimiterOptions by the compiler. */
export const LIMITER_OPTIONS = optionNames<LimiterOptions>({
  store: true,
  rules: true,
  name: true,
  prefix: true,
  clock: true,
  mode: true,
  quotaFor: true,
  timeout: true,
  onStoreError: true,
  circuitBreaker: true,
  onDecision: true,
});

const RULE_ALGORITHMS: ReadonlySet<string> = new Set(ALGORITHM_NAMES);

export function checkRules(value: unknown, field: string): readonly Rule[] {
  const list = (Array.isArray(value) ? value : [value]) as unknown[];
  if (list.length === 0) {
    throw new SluiceError('INVALID_OPTION', `${field} must hold at least one rule, such as tokenBucket({...})`);
  }
  const ids = new Set<string>();
  for (const rule of list) {
    const candidate = rule as Rule | undefined;
    if (typeof candidate !== 'object' || candidate === null || !RULE_ALGORITHMS.has(candidate.algorithm)) {
      throw new SluiceError(
        'INVALID_OPTION',
        `${field} must be rules made by fixedWindow(), tokenBucket() and the like, got ${describe(rule)}`,
      );
    }
    if (ids.has(candidate.id)) {
      throw new SluiceError(
        'INVALID_OPTION',
        `${field}: two rules share the id ${JSON.stringify(candidate.id)}; give one of them an explicit id`,
      );
    }
    ids.add(candidate.id);
  }
  return Object.freeze([...(list as Rule[])]);
}

export function checkQuotas(value: unknown): ReadonlyMap<string, readonly Rule[]> {
  if (!(value instanceof Map)) {
    throw new SluiceError('INVALID_OPTION', `configure: quotas must be a Map from identity to rules, got ${describe(value)}`);
  }
  const checked = new Map<string, readonly Rule[]>();
  for (const [identity, rules] of value as Map<unknown, unknown>) {
    if (typeof identity !== 'string' || identity.length === 0) {
      throw new SluiceError('INVALID_OPTION', `configure: quotas keys must be non-empty identity strings, got ${describe(identity)}`);
    }
    checked.set(identity, checkRules(rules, `quotas[${JSON.stringify(identity.slice(0, 64))}]`));
  }
  return checked;
}

/**
 * The deny list after `configure({ deny })`: `current` when the list is left out or holds the same entries (so
 * the array object, and whatever a reader built from it, stays), else the new list, checked and frozen. A list
 * already checked (the watcher giving back the code's list, or a document's) is taken as it is, array and all.
 */
/**
 * A live deny list as the limiter holds it (deny/lineage.ts's LiveDenyLineage, made by `liveDenyList` in
 * `@sluice/core/config`): it takes changes of some entries through its own `change`, so a worker that never changes a
 * list entry by entry does not ship that code.
 */
export interface LiveDenyList extends DenyLineage {
  readonly live: true;
  readonly list: readonly DenyEntry[];
}

/**
 * `configure()`'s deny list and deny mode: a new `deny` array replaces the list unless it holds the same entries; a
 * live list is held as it is (its own `change` changes it). The deny mode is the new one when given.
 */
export function nextDeny(
  changes: LimiterChanges,
  current: { readonly denyList: readonly DenyEntry[]; readonly denyMode: DenyMode },
): { list: readonly DenyEntry[]; live: LiveDenyList | undefined; denyMode: DenyMode } {
  const deny = changes.deny as Partial<LiveDenyList> | readonly DenyEntry[] | undefined;
  const live = (deny as Partial<LiveDenyList> | undefined)?.live === true ? (deny as LiveDenyList) : undefined;
  // `current.denyList` is the last list set whole: a live list's entries are never read here (a copy of 100,000).
  const list = live === undefined ? nextDenyList(deny, current.denyList) : current.denyList;
  return { list, live, denyMode: nextDenyMode(changes.denyMode, current.denyMode) };
}

function nextDenyList(value: unknown, current: readonly DenyEntry[]): readonly DenyEntry[] {
  if (value === undefined || value === current) return current;
  const checked = isCheckedDenyList(value) ? value : checkDenyList(value, 'configure: deny');
  return sameDenyList(checked, current) ? current : checked;
}

function nextDenyMode(value: unknown, current: DenyMode): DenyMode {
  if (value === undefined) return current;
  return modeOption(value, 'configure: denyMode');
}

export function readCost(options: LimitOptions, operation: Operation): number {
  checkLimitOptions(options, operation);
  const cost = options.cost;
  if (cost === undefined) return 1;
  if (!Number.isSafeInteger(cost) || cost < 0) {
    throw new SluiceError('INVALID_COST', `cost must be a non-negative integer, got ${describe(cost)}`);
  }
  return cost;
}

/** The options each operation accepts, and the error's prefix: constants, so a check that passes allocates nothing. */
const OPERATION_OPTIONS: Readonly<Record<Operation, { readonly known: readonly string[]; readonly where: string }>> = {
  consume: { known: ['cost'], where: 'limit options' },
  peek: { known: ['cost'], where: 'peek options' },
  refund: { known: ['cost'], where: 'refund options' },
  take: { known: ['cost'], where: 'take options' },
  reserve: { known: ['cost', 'maxWait'], where: 'reserve options' },
};
/** reserve's maxWait: up to 2^47 ms, the clock's own range, so `now + maxWait` stays exact. */
const MAX_WAIT_RANGE: DurationRange = { min: 0, max: MAX_CLOCK_MS };

/** Per-call options: `limit(id, 5)` or `{ weight: 5 }` would otherwise silently cost 1. */
function checkLimitOptions(options: LimitOptions, operation: Operation): void {
  if (typeof options !== 'object' || options === null) {
    throw new SluiceError('INVALID_OPTION', `limit options must be an object such as { cost: 2 }, got ${describe(options)}`);
  }
  const accepted = OPERATION_OPTIONS[operation];
  rejectUnknownOptions(options, accepted.known, accepted.where);
}

/** reserve's maxWait (required), in ms. */
export function readMaxWait(options: ReserveOptions): number {
  return durationOption(options.maxWait, 'reserve options: maxWait', MAX_WAIT_RANGE);
}

/** Refuses an operation the store does not announce (before anything is counted); reserve needs its options. */
export function checkOperation(store: Store, options: TakeOptions | ReserveOptions | undefined, operation: 'take' | 'reserve'): void {
  if (!store.capabilities.operations.includes(operation)) {
    throw new SluiceError(
      'UNSUPPORTED_OPERATION',
      `${operation}: the store does not support the ${operation} operation (its capabilities.operations lack '${operation}'); sluice's memory, SQLite, Redis and Upstash stores do`,
    );
  }
  if (operation === 'reserve' && (typeof options !== 'object' || options === null)) {
    throw new SluiceError('INVALID_OPTION', `reserve options must be an object such as { maxWait: '1s' }, got ${describe(options)}`);
  }
}

/** The store announces the two operations every limiter runs. */
export function checkStoreOperations(store: Store): void {
  const { operations } = store.capabilities;
  if (!Array.isArray(operations) || !operations.includes('limit') || !operations.includes('reset')) {
    throw new SluiceError(
      'INVALID_OPTION',
      `createLimiter: store.capabilities.operations must list 'limit' and 'reset', got ${describe(operations)}`,
    );
  }
}

/** The limiter's optional callbacks are functions when given. */
export function checkCallbacks(options: Pick<LimiterOptions, 'clock' | 'quotaFor' | 'onDecision'>): void {
  clockOption(options.clock, 'createLimiter: clock');
  optionalFunction(options.quotaFor, 'createLimiter: quotaFor', '(identity) => rules | undefined');
  optionalFunction(options.onDecision, 'createLimiter: onDecision', '(event) => void');
}

/** The *Sync methods are refused up front, before anything is counted, when an answer could need a promise. */
export function checkSynchronous(store: Store, policy: Pick<FailurePolicy, 'synchronous'>, method: string): void {
  // The async method's name is only built on the way to an error: this runs on every synchronous decision.
  if (!store.capabilities.synchronous) {
    throw new SluiceError('UNSUPPORTED_OPERATION', `${method} needs a synchronous store (memory, SQLite); use ${method.slice(0, -4)}()`);
  }
  if (!policy.synchronous) {
    // Falling back would need a promise, and answering then retrying through limit() would consume twice and
    // count the store's failure twice.
    throw new SluiceError(
      'UNSUPPORTED_OPERATION',
      `${method} cannot be used when onStoreError is an asynchronous store (it could only answer a failure with a promise); use ${method.slice(0, -4)}()`,
    );
  }
}
