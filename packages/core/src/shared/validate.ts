import { describe } from './describe.js';
import { SluiceError } from './errors.js';

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

export function optionalString(value: unknown, field: string, pattern: RegExp, accepted: string): string | undefined {
  if (value === undefined) return undefined;
  if (typeof value !== 'string' || !pattern.test(value)) {
    throw new SluiceError('INVALID_OPTION', `${field} must be ${accepted}, got ${describe(value)}`);
  }
  return value;
}
