/**
 * The one duration grammar of every sluice package, its options, its JSON rule specs, the CLI's flags and the
 * dashboard's forms:
 * - a number: whole milliseconds (`1500`);
 * - text of digits alone: whole milliseconds too (`'1500'`), so a flag such as `--for 1500` means what `1500` means;
 * - text with units: one or more parts `<number><unit>`, units `ms`, `s`, `m`, `h`, `d`, largest first, each at most
 *   once (`'250ms'`, `'1s'`, `'1h30m'`, `'1d12h'`), one space allowed between a number and its unit (`'10 s'`); a
 *   part's number may have a decimal fraction when the whole comes to whole milliseconds (`'1.5h'`, `'0.25s'`;
 *   not `'1.5ms'`).
 * Nothing else: no sign, no exponent, no spaces around or between parts, no other unit or case (`'1H'`). Each option
 * then bounds the value (durationOption's `range`).
 */
import { describe } from './describe.js';
import { SluiceError } from './errors.js';

/**
 * A duration: a non-negative whole number of milliseconds, or text such as `'250ms'`, `'1s'`, `'5m'`, `'1h30m'`,
 * `'1d'` (the grammar above). Every duration option of every sluice package takes one and is named for what it is
 * (`window`, `timeout`, `maxWait`), never with a unit suffix; numbers that sluice returns carry theirs (`windowMs`,
 * `retryAfter` in ms).
 */
export type Duration =
  number | `${number}${DurationUnit}` | `${number} ${DurationUnit}` | `${number}${DurationUnit}${number}${DurationUnit}${string}`;
export type DurationUnit = 'ms' | 's' | 'm' | 'h' | 'd';

/** The range one duration option accepts, in whole milliseconds. */
export interface DurationRange {
  /** @default 0 */
  readonly min?: number;
  /** @default Number.MAX_SAFE_INTEGER */
  readonly max?: number;
}

/** Units largest first: a part's unit must come after the previous part's. */
const UNITS: readonly (readonly [DurationUnit, number])[] = [
  ['d', 86_400_000],
  ['h', 3_600_000],
  ['m', 60_000],
  ['s', 1_000],
  ['ms', 1],
];
/** One part: digits, an optional fraction, an optional space, a unit (`ms` before `m`, so `5ms` is not 5 m and `s`). */
const PART = /(\d+)(?:\.(\d+))? ?(ms|s|m|h|d)/y;
const DIGITS = /^\d+$/;
const AT_LEAST_ONE: DurationRange = { min: 1 };
const GRAMMAR = "a whole number of ms or a string like '250ms', '1s', '5m', '1h', '1d'";

/**
 * Parses a duration once, at the public edge, into whole milliseconds (at least 1: a rule's window or interval).
 * `field` names the option in the error, e.g. `tokenBucket: interval`.
 */
export function parseDuration(value: unknown, field: string): number {
  return durationOption(value, field, AT_LEAST_ONE);
}

/**
 * Reads a duration option into whole milliseconds within `range` (by default any non-negative safe integer).
 * The one check behind every duration option: the error names `field`, the range and the grammar, and says what is
 * wrong when it can, e.g. `[sluice] createLimiter: timeout must be a duration from 1 to 2147483647 ms (a whole
 * number of ms or a string like '250ms', ...), got "soon"`, `... got "1.5ms" (not a whole number of ms)`.
 */
export function durationOption(value: unknown, field: string, range?: DurationRange): number {
  const min = range?.min ?? 0;
  const max = range?.max ?? Number.MAX_SAFE_INTEGER;
  const read = readDuration(value);
  if (typeof read === 'number' && read >= min && read <= max) return read;
  // A value out of range is said by the bounds; one that is not a duration gets what is wrong with it, when known.
  const why = typeof read === 'string' ? read : '';
  const bounds =
    max === Number.MAX_SAFE_INTEGER ? `of at least ${min} ms` : `from ${min} ${shown(max).endsWith('d') ? 'ms ' : ''}to ${shown(max)}`;
  throw new SluiceError('INVALID_OPTION', `${field} must be a duration ${bounds} (${GRAMMAR}), got ${describe(value)}${why}`);
}

/** The duration in whole ms, or why it is not one (text after the value in the error; empty: it is not one at all). */
function readDuration(value: unknown): number | string {
  if (typeof value === 'number') {
    if (Number.isSafeInteger(value) && value >= 0) return value;
    return Number.isFinite(value) && value >= 0 && value <= Number.MAX_SAFE_INTEGER ? ' (not a whole number of ms)' : '';
  }
  if (typeof value !== 'string') return '';
  if (DIGITS.test(value)) {
    const ms = Number(value);
    return Number.isSafeInteger(ms) ? ms : ' (too large)';
  }
  if (value.length === 0) return '';
  if (value !== value.trim()) return ' (no spaces around it)';
  let ms = 0;
  let next = 0; // index in UNITS of the largest unit the next part may have
  PART.lastIndex = 0;
  while (PART.lastIndex < value.length) {
    const at = PART.lastIndex;
    const part = PART.exec(value);
    if (part === null || part.index !== at) return at > 0 ? ` (cannot read ${JSON.stringify(value.slice(at))})` : '';
    const unit = UNITS.findIndex(([name]) => name === part[3]);
    if (unit < next) return ` (units go largest first, each once: d, h, m, s, ms)`;
    next = unit + 1;
    const partMs = exactMs(part[1]!, part[2] ?? '', UNITS[unit]![1]);
    if (partMs === undefined) return ' (not a whole number of ms)';
    ms += partMs;
    if (!Number.isSafeInteger(ms)) return ' (too large)';
  }
  return ms;
}

/**
 * `whole.fraction` units as whole milliseconds, computed exactly (0.017m is 1020 ms, where 0.017 * 60000 in
 * floating point is not); undefined when it is not whole, or too large to hold exactly.
 */
function exactMs(whole: string, fraction: string, unitMs: number): number | undefined {
  const digits = fraction.replace(/0+$/, '');
  const wholeMs = Number(whole) * unitMs;
  if (digits.length === 0) return Number.isSafeInteger(wholeMs) ? wholeMs : Number.MAX_SAFE_INTEGER + 1;
  if (digits.length > 15) return undefined;
  // fraction * unitMs / 10^k is whole when 10^k / gcd(unitMs, 10^k) divides the fraction's digits.
  const scale = 10 ** digits.length;
  const common = gcd(unitMs, scale);
  const numerator = Number(digits);
  if (numerator % (scale / common) !== 0) return undefined;
  const fractionMs = (numerator / (scale / common)) * (unitMs / common);
  return Number.isSafeInteger(wholeMs + fractionMs) ? wholeMs + fractionMs : Number.MAX_SAFE_INTEGER + 1;
}

function gcd(a: number, b: number): number {
  while (b !== 0) [a, b] = [b, a % b];
  return a;
}

/** A bound as the message shows it: whole days as days (`3650d` reads better than 315360000000), else in ms. */
function shown(ms: number): string {
  return ms >= 86_400_000 && ms % 86_400_000 === 0 ? `${ms / 86_400_000}d` : `${ms} ms`;
}
