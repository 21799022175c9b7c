import { describe, expect, test } from 'vitest';
import { fixedWindow, gcra, leakyBucket, parseDuration, slidingWindowLog, tokenBucket } from '../src/index.js';

describe('durations', () => {
  test.each([
    ['250ms', 250],
    ['1s', 1_000],
    ['5m', 300_000],
    ['1h', 3_600_000],
    ['1d', 86_400_000],
    ['1.5s', 1_500],
    [' 2 s ', 2_000],
    ['0.25s', 250],
    [1, 1],
    [60_000, 60_000],
  ])('%j is %i ms', (input, ms) => {
    expect(parseDuration(input, 'test: window')).toBe(ms);
  });

  test('rule factories accept strings and numbers, parsed once into windowMs', () => {
    expect(fixedWindow({ limit: 1, window: '250ms' }).windowMs).toBe(250);
    expect(slidingWindowLog({ limit: 1, window: '5m' }).windowMs).toBe(300_000);
    expect(fixedWindow({ limit: 1, window: 1_000 }).windowMs).toBe(1_000);
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
