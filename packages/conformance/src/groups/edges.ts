import type { Decision, Store } from '@sluice/core';
import { describe, expect, it } from 'vitest';
import { ALGORITHMS, HOUR } from '../algorithms.js';
import { itWithKeys, type TestContext } from '../context.js';

/** allowed / remaining / reason of a decision, for compact assertions; retryAfter is checked by reason. */
function expectShape(decision: Decision, allowed: boolean, remaining: number, reason = allowed ? 'ok' : 'rate_limited'): void {
  expect({ allowed: decision.allowed, remaining: decision.remaining, reason: decision.reason }).toEqual({ allowed, remaining, reason });
  if (allowed) expect(decision.retryAfter).toBe(0);
  else if (reason === 'cost_exceeds_limit') expect(decision.retryAfter).toBe(Number.POSITIVE_INFINITY);
  else {
    expect(decision.retryAfter).toBeGreaterThan(0);
    expect(Number.isFinite(decision.retryAfter)).toBe(true);
  }
}

/**
 * Peek, refund and cost edges for every algorithm, at hour-long windows so that they hold under any clock.
 * Capacity 3 unless stated.
 */
export function edgeTests(get: () => TestContext<Store>, inspect: boolean): void {
  describe('peek writes nothing', () => {
    for (const algorithm of ALGORITHMS) {
      it(`${algorithm.title}: peeks and cost 0 report the room without taking it`, async () => {
        const limiter = get().limiter({ rules: algorithm.rule(3, HOUR) });
        expectShape(await limiter.peek('alice'), true, 3);
        expectShape(await limiter.peek('alice', 3), true, 3);
        expectShape(await limiter.limit('alice', 0), true, 3);
        expectShape(await limiter.refund('alice', 0), true, 3);
        expectShape(await limiter.peek('alice', 4), false, 3, 'cost_exceeds_limit');
        expectShape(await limiter.limit('alice', 3), true, 0);
        expectShape(await limiter.peek('alice'), false, 0);
        // Cost 0 fits even an exhausted rule: it asks, it does not take.
        expectShape(await limiter.limit('alice', 0), true, 0);
        expectShape(await limiter.limit('alice'), false, 0);
      });
    }

    itWithKeys(inspect, 'every algorithm: peeks, cost 0 and costs that can never fit create no state', async () => {
      const context = get();
      for (const [i, algorithm] of ALGORITHMS.entries()) {
        const name = `peek${i}`;
        const limiter = context.limiter({ rules: algorithm.rule(3, HOUR), name });
        await limiter.peek('alice');
        await limiter.peek('alice', 3);
        await limiter.limit('alice', 0);
        await limiter.refund('alice', 0);
        await limiter.peek('alice', 4);
        expect(await context.keysOf('alice', name), `${algorithm.title}: peeks and cost 0 must not write state`).toEqual([]);
        await limiter.limit('alice', 4);
        await limiter.limit('alice', Number.MAX_SAFE_INTEGER);
        expect(await context.keysOf('alice', name), `${algorithm.title}: a request that can never pass must not write state`).toEqual([]);
        // The listing sees this algorithm's state once a request takes something, so the checks above can fail.
        await limiter.limit('alice');
        expect((await context.keysOf('alice', name)).length, `${algorithm.title}: consumed state must be stored`).toBeGreaterThan(0);
      }
    });
  });

  describe('refund', () => {
    for (const algorithm of ALGORITHMS) {
      it(`${algorithm.title}: gives units back but never lifts a rule above its capacity`, async () => {
        const limiter = get().limiter({ rules: algorithm.rule(3, HOUR) });
        expectShape(await limiter.refund('alice', 2), true, 3);
        expectShape(await limiter.limit('alice', 3), true, 0);
        expectShape(await limiter.limit('alice'), false, 0);
        expectShape(await limiter.refund('alice', 1), true, 1);
        expectShape(await limiter.limit('alice'), true, 0);
        expectShape(await limiter.refund('alice', 10), true, 3);
        expectShape(await limiter.limit('alice', 3), true, 0);
        expectShape(await limiter.refund('alice', Number.MAX_SAFE_INTEGER), true, 3);
        expectShape(await limiter.limit('alice', 3), true, 0);
        expectShape(await limiter.limit('alice'), false, 0);
      });
    }
  });

  describe('cost edges', () => {
    for (const algorithm of ALGORITHMS) {
      it(`${algorithm.title}: a cost equal to the capacity passes once; above it is refused at once and takes nothing`, async () => {
        const limiter = get().limiter({ rules: algorithm.rule(3, HOUR) });
        expectShape(await limiter.limit('alice', 4), false, 3, 'cost_exceeds_limit');
        expectShape(await limiter.limit('alice', Number.MAX_SAFE_INTEGER), false, 3, 'cost_exceeds_limit');
        expectShape(await limiter.limit('alice'), true, 2);
        // Too big for the capacity is a different answer from too big for what is left now.
        expectShape(await limiter.limit('alice', 4), false, 2, 'cost_exceeds_limit');
        expectShape(await limiter.limit('alice', 3), false, 2);
        expectShape(await limiter.limit('alice', 2), true, 0);
        expectShape(await limiter.limit('alice', 3), false, 0);
        expectShape(await limiter.peek('alice', Number.MAX_SAFE_INTEGER), false, 0, 'cost_exceeds_limit');
        expectShape(await limiter.limit('bob', 3), true, 0);
      });

      it(`${algorithm.title}: a capacity of 10^9 counts large costs exactly`, async () => {
        const big = 1_000_000_000;
        // One unit back per hour: the continuous algorithms stay put for a test that lasts milliseconds.
        const limiter = get().limiter({ rules: algorithm.rule(big, HOUR, 1) });
        expectShape(await limiter.limit('alice', big - 1), true, 1);
        expectShape(await limiter.limit('alice', 2), false, 1);
        expectShape(await limiter.limit('alice', big + 1), false, 1, 'cost_exceeds_limit');
        expectShape(await limiter.limit('alice', 1), true, 0);
        expectShape(await limiter.refund('alice', big - 7), true, big - 7);
        expectShape(await limiter.limit('alice', big - 7), true, 0);
        expectShape(await limiter.limit('alice', 1), false, 0);
      });
    }
  });
}
