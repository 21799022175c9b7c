/**
 * The option checks every sluice package shares: one file to read for what an option accepts. Each check throws
 * SluiceError INVALID_OPTION (or UNKNOWN_OPTION) with a message that names the field, says what is accepted and shows
 * what was received. The other packages import them from `@sluice/core/internal`; test/lint/shared-helpers.test.ts
 * fails when a package writes its own copy of one.
 */
import { describe } from './describe.js';
import { durationOption } from './duration.js';
import { SluiceError } from './errors.js';
import { MAX_TIMER_MS } from './timers.js';
import type { LimiterMode } from './types.js';

/**
 * Throws `UNKNOWN_OPTION` for any own key of `options` not in `known`: typos fail loudly. Allocates nothing when
 * every key is known: the limiter runs it on every call that passes options.
 */
export function rejectUnknownOptions(options: object, known: readonly string[], where: string): void {
  for (const key in options) {
    if (!known.includes(key) && Object.prototype.hasOwnProperty.call(options, key)) {
      throw new SluiceError('UNKNOWN_OPTION', `${where}: unknown option ${JSON.stringify(key)}; accepted options are ${known.join(', ')}`);
    }
  }
}

/** An optional callback option: `undefined` or a function; `shape` shows the call it should take, e.g. `(request) => boolean`. */
export function optionalFunction<T>(value: T | undefined, field: string, shape: string): T | undefined {
  if (value !== undefined && typeof value !== 'function') {
    throw new SluiceError('INVALID_OPTION', `${field} must be a function ${shape}, got ${describe(value)}`);
  }
  return value;
}

export function requireObject(value: unknown, where: string): Record<string, unknown> {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    throw new SluiceError('INVALID_OPTION', `${where}: options must be an object, got ${describe(value)}`);
  }
  return value as Record<string, unknown>;
}

/** A positive safe integer: limits, capacities, rates. */
export function positiveInteger(value: unknown, field: string): number {
  if (typeof value !== 'number' || !Number.isSafeInteger(value) || value < 1) {
    throw new SluiceError('INVALID_OPTION', `${field} must be a positive integer, got ${describe(value)}`);
  }
  return value;
}

/** An integer from `min` to `max`, both included: batch sizes, prefix lengths, hop counts. */
export function integerOption(value: unknown, field: string, min: number, max: number): number {
  if (typeof value !== 'number' || !Number.isInteger(value) || value < min || value > max) {
    throw new SluiceError('INVALID_OPTION', `${field} must be an integer from ${min} to ${max}, got ${describe(value)}`);
  }
  return value;
}

/** Guards the integer arithmetic of the algorithms: every product they form must stay below 2^53. */
export function boundedProduct(a: number, b: number, field: string): number {
  const product = a * b;
  if (!Number.isSafeInteger(product)) {
    throw new SluiceError(
      'INVALID_OPTION',
      `${field} is too large: the product ${a} × ${b} must stay below 2^53 so that time arithmetic stays exact`,
    );
  }
  return product;
}

/**
 * The option names of `T`, written once as an object whose keys are exactly T's: it fails to compile when an option
 * of T is missing from it or a key is not an option of T, so the list `rejectUnknownOptions` checks against cannot
 * drift from the interface. Use: `const KNOWN = optionNames<XOptions>({ a: true, b: true })`.
 */
export function optionNames<T extends object>(names: { readonly [K in keyof Required<T>]: true }): readonly string[] {
  return Object.freeze(Object.keys(names));
}

/** What a limiter's, a store's or a shedder's name (and a key prefix) is made of. */
const NAME_PATTERN = /^[A-Za-z0-9_.-]{1,64}$/;

/**
 * A name: 1 to 64 characters of letters, digits, `_`, `.` or `-` (it goes into store keys and metric labels). The one
 * check of a limiter's, a concurrency limiter's or a shedder's name and prefix, and of a name a config writer or an
 * analytics store is given.
 */
export function nameOption(value: unknown, field: string): string {
  if (typeof value !== 'string' || !NAME_PATTERN.test(value)) {
    throw new SluiceError(
      'INVALID_OPTION',
      `${field} must be 1 to 64 characters of letters, digits, '_', '.' or '-', got ${describe(value)}`,
    );
  }
  return value;
}

/** The modes of a limiter, a concurrency limiter, a shedder and a deny list, in the order messages list them. */
export const MODES: readonly LimiterMode[] = ['enforce', 'shadow', 'off'];

/** A mode (`mode`, `denyMode`): `'enforce'`, `'shadow'` or `'off'`. */
export function modeOption(value: unknown, field: string): LimiterMode {
  if (value !== 'enforce' && value !== 'shadow' && value !== 'off') {
    throw new SluiceError('INVALID_OPTION', `${field} must be 'enforce', 'shadow' or 'off', got ${describe(value)}`);
  }
  return value;
}

/** A `clock` option: `undefined` (Date.now) or a function returning epoch milliseconds. */
export function clockOption(value: unknown, field: string): () => number {
  return optionalFunction(value as (() => number) | undefined, field, '() => epoch ms') ?? Date.now;
}

/**
 * A duration a timer waits, from `min` ms (1 by default) to 2^31 − 1 ms: setTimeout fires at once past that range,
 * so a longer timeout, interval or wait would not be waited.
 */
export function timerDuration(value: unknown, field: string, min = 1): number {
  return durationOption(value, field, { min, max: MAX_TIMER_MS });
}

/** A shedder's priority classes: distinct non-empty strings, most important first; returned frozen. */
export function priorityClasses(value: unknown, field: string): readonly string[] {
  if (
    !Array.isArray(value) ||
    value.length === 0 ||
    value.some((c) => typeof c !== 'string' || c === '') ||
    new Set(value).size !== value.length
  ) {
    throw new SluiceError(
      'INVALID_OPTION',
      `${field} must be distinct non-empty strings, most important first, such as ['critical', 'write', 'read', 'test'], got ${describe(value)}`,
    );
  }
  return Object.freeze([...(value as string[])]);
}

/** Throws for a request whose class is not one of a shedder's `classes`, naming them: an unknown class is an error, not a silent pass. */
export function unknownPriorityClass(priority: unknown, classes: readonly string[], where: string): never {
  throw new SluiceError(
    'INVALID_OPTION',
    `${where}: unknown priority class ${describe(priority)}; the classes are ${classes.map((c) => JSON.stringify(c)).join(', ')}`,
  );
}
