import { describe } from './describe.js';
import { SluiceError } from './errors.js';

/** Latest time a clock may return: 2^47 ms, about the year 6429; keeps every sum of a time and a duration below 2^53. */
export const MAX_CLOCK_MS = 2 ** 47;

/**
 * A clock's reading as whole epoch milliseconds. Fractions are floored (`performance.timeOrigin +
 * performance.now()` is a fine clock); anything else throws INVALID_CLOCK, naming `caller`.
 */
export function readClock(clock: () => number, caller: string): number {
  const t = clock();
  if (typeof t === 'number' && t >= 0 && t <= MAX_CLOCK_MS) return Math.floor(t);
  throw new SluiceError(
    'INVALID_CLOCK',
    `${caller}: clock must return epoch milliseconds, a finite number from 0 to ${MAX_CLOCK_MS} (fractions are floored), got ${describe(t)}`,
  );
}
