import { SluiceError, describe } from './errors.js';

/** A duration in whole milliseconds, or a string such as `'250ms'`, `'1s'`, `'5m'`, `'1h'`, `'1d'`. */
export type Duration = number | `${number}${DurationUnit}` | `${number} ${DurationUnit}`;
export type DurationUnit = 'ms' | 's' | 'm' | 'h' | 'd';

const UNIT_MS: Record<DurationUnit, number> = { ms: 1, s: 1_000, m: 60_000, h: 3_600_000, d: 86_400_000 };
const PATTERN = /^\s*(\d+(?:\.\d+)?)\s*(ms|s|m|h|d)\s*$/;

/**
 * Parses a duration once, at the public edge, into whole milliseconds (at least 1).
 * `field` names the option in the error, e.g. `tokenBucket: interval`.
 */
export function parseDuration(value: unknown, field: string): number {
  let ms: number;
  if (typeof value === 'number') {
    ms = value;
  } else if (typeof value === 'string') {
    const match = PATTERN.exec(value);
    if (!match) {
      throw new SluiceError(
        'INVALID_OPTION',
        `${field} must be milliseconds or a string like '250ms', '1s', '5m', '1h', '1d', got ${describe(value)}`,
      );
    }
    ms = Number(match[1]) * UNIT_MS[match[2] as DurationUnit];
  } else {
    throw new SluiceError(
      'INVALID_OPTION',
      `${field} must be milliseconds or a string like '1s', got ${describe(value)}`,
    );
  }
  if (!Number.isSafeInteger(ms) || ms < 1) {
    throw new SluiceError(
      'INVALID_OPTION',
      `${field} must be a whole number of milliseconds of at least 1, got ${describe(value)}`,
    );
  }
  return ms;
}
