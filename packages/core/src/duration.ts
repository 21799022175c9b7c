import { describe } from './describe.js';
// Only SluiceError from errors.ts: @sluice/internal compiles this file and swaps that import for @sluice/core's.
import { SluiceError } from './errors.js';

/**
 * A duration: a non-negative number of milliseconds, or a string such as `'250ms'`, `'1s'`, `'5m'`, `'1h'`, `'1d'`.
 * Every duration option of every sluice package takes one and is named for what it is (`window`, `timeout`,
 * `maxWait`), never with a unit suffix; numbers that sluice returns carry theirs (`windowMs`, `retryAfter` in ms).
 */
export type Duration = number | `${number}${DurationUnit}` | `${number} ${DurationUnit}`;
export type DurationUnit = 'ms' | 's' | 'm' | 'h' | 'd';

/** The range one duration option accepts, in whole milliseconds. */
export interface DurationRange {
  /** @default 0 */
  readonly min?: number;
  /** @default Number.MAX_SAFE_INTEGER */
  readonly max?: number;
}

const UNIT_MS: Record<DurationUnit, number> = { ms: 1, s: 1_000, m: 60_000, h: 3_600_000, d: 86_400_000 };
const PATTERN = /^\s*(\d+(?:\.\d+)?)\s*(ms|s|m|h|d)\s*$/;
const AT_LEAST_ONE: DurationRange = { min: 1 };

/**
 * Parses a duration once, at the public edge, into whole milliseconds (at least 1: a rule's window or interval).
 * `field` names the option in the error, e.g. `tokenBucket: interval`.
 */
export function parseDuration(value: unknown, field: string): number {
  return durationOption(value, field, AT_LEAST_ONE);
}

/**
 * Reads a duration option into whole milliseconds within `range` (by default any non-negative safe integer).
 * The one check behind every duration option: the error names `field` and says what is accepted, e.g.
 * `[sluice] createLimiter: timeout must be a duration from 1 to 2147483647 ms (a number of ms or a string like
 * '250ms', '1s', '5m', '1h', '1d'), got "soon"`.
 */
export function durationOption(value: unknown, field: string, range?: DurationRange): number {
  const min = range?.min ?? 0;
  const max = range?.max ?? Number.MAX_SAFE_INTEGER;
  let ms = Number.NaN;
  if (typeof value === 'number') ms = value;
  else if (typeof value === 'string') {
    const match = PATTERN.exec(value);
    if (match) ms = Number(match[1]) * UNIT_MS[match[2] as DurationUnit];
  }
  if (Number.isSafeInteger(ms) && ms >= min && ms <= max) return ms;
  const bounds = max === Number.MAX_SAFE_INTEGER ? `of at least ${min} ms` : `from ${min} to ${max} ms`;
  throw new SluiceError(
    'INVALID_OPTION',
    `${field} must be a duration ${bounds} (a whole number of ms or a string like '250ms', '1s', '5m', '1h', '1d'), got ${describe(value)}`,
  );
}
