import { describe, expect, test } from 'vitest';
import { fixedWindow, gcra, leakyBucket, parseDuration, slidingWindowLog, tokenBucket } from '../src/index.js';
import { durationOption } from '../src/shared/duration.js';

/** What durationOption throws for `value`, or undefined when it accepts it. */
function refusal(value: unknown, range?: { min?: number; max?: number }): string | undefined {
  try {
    durationOption(value, 'test: wait', range);
    return undefined;
  } catch (error) {
    return (error as Error).message;
  }
}

describe('the duration grammar, one for every option, flag and form', () => {
  test.each<[unknown, number]>([
    // numbers: whole ms
    [0, 0],
    [1, 1],
    [60_000, 60_000],
    [Number.MAX_SAFE_INTEGER, Number.MAX_SAFE_INTEGER],
    // text of digits alone: whole ms, as the number
    ['0', 0],
    ['2000', 2_000],
    ['007', 7],
    // one part with a unit
    ['250ms', 250],
    ['1s', 1_000],
    ['5m', 300_000],
    ['1h', 3_600_000],
    ['1d', 86_400_000],
    ['0s', 0],
    // one space between a number and its unit
    ['10 s', 10_000],
    ['250 ms', 250],
    // fractions that come to whole ms, computed exactly (0.017 * 60000 is 1020.0000000000001 in floating point)
    ['1.5s', 1_500],
    ['0.25s', 250],
    ['1.5h', 5_400_000],
    ['1.1s', 1_100],
    ['0.017m', 1_020],
    ['0.134m', 8_040],
    ['2.10s', 2_100],
    ['0.001s', 1],
    ['1.0ms', 1],
    ['0.5d', 43_200_000],
    // compound: largest unit first, each at most once
    ['1h30m', 5_400_000],
    ['1d12h', 129_600_000],
    ['1m30s', 90_000],
    ['1s500ms', 1_500],
    ['1d2h3m4s5ms', 93_784_005],
    ['1h0.5m', 3_630_000],
    ['1 h30 m', 5_400_000],
  ])('%j is %i ms', (input, ms) => {
    expect(durationOption(input, 'test: wait')).toBe(ms);
  });

  test.each<[unknown, string]>([
    // not whole ms
    [1.5, ' (not a whole number of ms)'],
    ['1.5ms', ' (not a whole number of ms)'],
    ['0.0001s', ' (not a whole number of ms)'],
    ['1.2345s', ' (not a whole number of ms)'],
    // negative, not finite, not a number
    [-1, ''],
    ['-1s', ''],
    ['-5', ''],
    [Number.NaN, ''],
    [Number.POSITIVE_INFINITY, ''],
    ['NaN', ''],
    ['Infinity', ''],
    [null, ''],
    [undefined, ''],
    [true, ''],
    [{}, ''],
    // whitespace around or between parts, or several spaces
    [' 1h', ' (no spaces around it)'],
    ['1h ', ' (no spaces around it)'],
    [' 2000', ' (no spaces around it)'],
    ['1h 30m', ' (cannot read " 30m")'],
    ['1  h', ''],
    ['', ''],
    ['   ', ' (no spaces around it)'],
    // other units, case, exponents, signs, separators
    ['1H', ''],
    ['1sec', ' (cannot read "ec")'],
    ['1w', ''],
    ['1e3', ''],
    ['1e3ms', ''],
    ['+1s', ''],
    ['.5s', ''],
    ['5.s', ''],
    ['1,5s', ''],
    ['1h-30m', ' (cannot read "-30m")'],
    ['soon', ''],
    ['h', ''],
    // compound out of order or repeated
    ['30m1h', ' (units go largest first, each once: d, h, m, s, ms)'],
    ['1h1h', ' (units go largest first, each once: d, h, m, s, ms)'],
    ['1s1m', ' (units go largest first, each once: d, h, m, s, ms)'],
    // too large to hold exactly
    [Number.MAX_SAFE_INTEGER + 1, ''],
    ['9007199254740992', ' (too large)'],
    ['999999999999d', ' (too large)'],
    ['100000000000d1ms', ' (too large)'],
  ])('%j is refused%s', (input, why) => {
    const message = refusal(input);
    expect(message).toBeDefined();
    expect(message).toMatch(
      /^\[sluice\] test: wait must be a duration of at least 0 ms \(a whole number of ms or a string like '250ms', '1s', '5m', '1h', '1d'\), got /,
    );
    expect(message!.endsWith(why)).toBe(true);
    if (why === '') expect(message).toMatch(/, got [^(]*$/);
  });

  test('a range bounds the value, in the unit that reads best: whole days as days', () => {
    expect(refusal('0s', { min: 1 })).toMatch(/must be a duration of at least 1 ms .*, got "0s"$/);
    expect(refusal('2s', { min: 1, max: 1_000 })).toMatch(/must be a duration from 1 to 1000 ms .*, got "2s"$/);
    expect(refusal('100000000d', { min: 1, max: 3_650 * 86_400_000 })).toMatch(
      /must be a duration from 1 ms to 3650d .*, got "100000000d"$/,
    );
    expect(durationOption('3650d', 'test: wait', { min: 1, max: 3_650 * 86_400_000 })).toBe(315_360_000_000);
  });

  test('parseDuration is the grammar with at least 1 ms', () => {
    expect(parseDuration('1h30m', 'test: window')).toBe(5_400_000);
    expect(parseDuration('2000', 'test: window')).toBe(2_000);
    expect(() => parseDuration(0, 'test: window')).toThrow(/at least 1 ms/);
    expect(() => parseDuration('0ms', 'test: window')).toThrow(/at least 1 ms/);
  });

  test('rule factories accept strings and numbers, parsed once into windowMs', () => {
    expect(fixedWindow({ limit: 1, window: '250ms' }).windowMs).toBe(250);
    expect(slidingWindowLog({ limit: 1, window: '5m' }).windowMs).toBe(300_000);
    expect(fixedWindow({ limit: 1, window: 1_000 }).windowMs).toBe(1_000);
    expect(fixedWindow({ limit: 1, window: '1h30m' }).windowMs).toBe(5_400_000);
    expect(tokenBucket({ capacity: 10, refillRate: 1, interval: '1h' }).params).toMatchObject({ intervalMs: 3_600_000 });
    expect(tokenBucket({ capacity: 10, refillRate: 1 }).params).toMatchObject({ intervalMs: 1_000 }); // default '1s'
    expect(leakyBucket({ capacity: 2, leakRate: 1, interval: '1d' }).params).toMatchObject({ intervalMs: 86_400_000 });
    expect(gcra({ limit: 10, period: '1m' }).params).toMatchObject({ periodMs: 60_000, burst: 10 });
  });

  test('windowMs is how long the full capacity takes to come back', () => {
    expect(tokenBucket({ capacity: 10, refillRate: 4, interval: '1s' }).windowMs).toBe(2_500);
    expect(tokenBucket({ capacity: 10, refillRate: 4, interval: '1s', refill: 'interval' }).windowMs).toBe(3_000);
    expect(leakyBucket({ capacity: 3, leakRate: 2, interval: '1s' }).windowMs).toBe(1_500);
    expect(gcra({ limit: 3, period: '1s', burst: 2 }).windowMs).toBe(667);
  });
});
