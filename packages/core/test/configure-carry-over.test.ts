/**
 * The bug this pins: changing a rule's interval reinterpreted the stored state (spend 1 of 10 tokens, change the
 * interval from 1s to 1m: the next peek said 0 left, reset in 59 s; the other way round it over-admitted). The
 * rule now: every state is either in units that do not depend on the rule's parameters (instants, counts) or
 * records the parameter it is scaled by, so a rule changed at run time under the same id carries its state over.
 */
import fc from 'fast-check';
import { describe, expect, test } from 'vitest';
import { fixedWindow, gcra, leakyBucket, slidingWindowCounter, slidingWindowLog, tokenBucket, type Rule } from '../src/index.js';
import { stepRule } from '../src/store/index.js';
import { PLAIN } from './support/cases.js';
import { harness, RUNS, CLOCK_START } from './support/scenario.js';

/** Spends `spent` under `before`, switches to `after` (same id) and peeks. */
function carried(before: Rule, after: Rule, spent: number, elapsedMs = 0) {
  const h = harness(before);
  for (let i = 0; i < spent; i++) expect(h.limiter.limitSync('user').allowed).toBe(true);
  h.limiter.configure({ rules: after });
  h.now += elapsedMs;
  return h.limiter.peekSync('user');
}

describe("configure() keeps every algorithm's counters, whatever parameter changes", () => {
  test('regression: token bucket, interval 1s -> 1m after spending 1 of 10: 9 left, the 10th back in 6 s', () => {
    const decision = carried(
      tokenBucket({ capacity: 10, refillRate: 10, interval: '1s' }),
      tokenBucket({ capacity: 10, refillRate: 10, interval: '1m' }),
      1,
    );
    expect(decision.remaining).toBe(9);
    expect(decision.resetAt - CLOCK_START).toBe(6_000);
  });

  test('regression: token bucket, interval 1m -> 1s after spending 10 of 10 does not over-admit', () => {
    const decision = carried(
      tokenBucket({ capacity: 10, refillRate: 10, interval: '1m' }),
      tokenBucket({ capacity: 10, refillRate: 10, interval: '1s' }),
      10,
    );
    expect(decision.remaining).toBe(0);
    expect(decision.resetAt - CLOCK_START).toBe(1_000); // empty, refilled at the new rate of 10 per second
  });

  test('token bucket with interval refill: the spent tokens stay spent across an interval change', () => {
    const before = tokenBucket({ capacity: 5, refillRate: 5, interval: '1s', refill: 'interval' });
    const after = tokenBucket({ capacity: 5, refillRate: 5, interval: '1m', refill: 'interval' });
    const decision = carried(before, after, 3, 500);
    expect(decision.remaining).toBe(2);
    expect(decision.resetAt - CLOCK_START).toBe(60_000); // the next refill instant of the new interval
  });

  test('leaky bucket: what is queued stays queued across an interval change', () => {
    const decision = carried(
      leakyBucket({ capacity: 4, leakRate: 1, interval: '1s' }),
      leakyBucket({ capacity: 4, leakRate: 1, interval: '1m' }),
      3,
    );
    expect(decision.remaining).toBe(1);
    expect(decision.resetAt - CLOCK_START).toBe(180_000); // 3 queued, draining one a minute
  });

  test('GCRA: the theoretical arrival time is kept across a limit change', () => {
    const decision = carried(
      gcra({ limit: 1000, period: '1s', burst: 10, id: 'g' }),
      gcra({ limit: 1, period: '1s', burst: 10, id: 'g' }),
      3,
    );
    // 3 cells of 1 ms under the old rule: the TAT is 3 ms ahead; the new rule needs 1 s per cell, so 9 remain.
    expect(decision.remaining).toBe(9);
    expect(decision.resetAt - CLOCK_START).toBe(3);
  });

  test('windows keep their count (explicit id) and a lowered limit reads as exhausted, not negative', () => {
    expect(carried(fixedWindow({ limit: 10, window: '1s', id: 'w' }), fixedWindow({ limit: 10, window: '1m', id: 'w' }), 4).remaining).toBe(
      6,
    );
    expect(
      carried(slidingWindowLog({ limit: 10, window: '1s', id: 'w' }), slidingWindowLog({ limit: 3, window: '1m', id: 'w' }), 4).remaining,
    ).toBe(0);
    expect(
      carried(slidingWindowCounter({ limit: 10, window: '1s', id: 'w' }), slidingWindowCounter({ limit: 5, window: '1s', id: 'w' }), 4)
        .remaining,
    ).toBe(1);
  });

  test('property: after any change of parameters, a bucket never holds more than it held (rescaled) nor more than its capacity', () => {
    const bucket = fc.record(
      {
        capacity: fc.integer({ min: 1, max: 20 }),
        rate: fc.integer({ min: 1, max: 20 }),
        intervalMs: fc.integer({ min: 1, max: 3_600_000 }),
      },
      PLAIN,
    );
    fc.assert(
      fc.property(bucket, bucket, fc.integer({ min: 0, max: 20 }), (a, b, spend) => {
        for (const make of [tokenBucket, (o: Parameters<typeof tokenBucket>[0]) => tokenBucket({ ...o, refill: 'interval' })]) {
          const before = make({ capacity: a.capacity, refillRate: a.rate, interval: a.intervalMs });
          const after = make({ capacity: b.capacity, refillRate: b.rate, interval: b.intervalMs });
          let state = stepRule(before, undefined, CLOCK_START, 0, 'peek').next;
          let left = a.capacity;
          for (let i = 0; i < Math.min(spend, a.capacity); i++) {
            const step = stepRule(before, i === 0 ? undefined : state, CLOCK_START, 1, 'consume');
            state = step.next;
            left = step.remaining;
          }
          const read = stepRule(after, spend === 0 ? undefined : state, CLOCK_START, 0, 'peek');
          expect(read.remaining).toBeLessThanOrEqual(Math.min(spend === 0 ? b.capacity : left, b.capacity));
          expect(Number.isSafeInteger(read.resetAt)).toBe(true);
        }
      }),
      RUNS,
    );
  });
});
