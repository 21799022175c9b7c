import type { Store } from '@sluice/core';
import { describe, expect, it } from 'vitest';
import { ALGORITHMS, HOUR } from '../algorithms.js';
import type { TestContext } from '../context.js';

const IDENTITIES = 4;
const IN_FLIGHT = 12;
const CAPACITY = 5;

export function concurrencyTests(get: () => TestContext<Store>): void {
  describe('atomicity under concurrent calls', () => {
    for (const algorithm of ALGORITHMS) {
      it(`${algorithm.title}: ${IDENTITIES} identities × ${IN_FLIGHT} requests in flight admit exactly ${CAPACITY} each`, async () => {
        const limiter = get().rawLimiter({ rules: algorithm.rule(CAPACITY, HOUR) });
        const identities = Array.from({ length: IDENTITIES }, (_, i) => `user-${i}`);
        const calls = identities.flatMap((identity) =>
          Array.from({ length: IN_FLIGHT }, () => limiter.limit(identity).then((d) => ({ identity, d }))),
        );
        const results = await Promise.all(calls);
        for (const identity of identities) {
          const mine = results.filter((r) => r.identity === identity).map((r) => r.d);
          expect(mine.every((d) => !d.degraded)).toBe(true);
          const allowed = mine.filter((d) => d.allowed);
          expect(allowed.length, `${identity}: allowed count`).toBe(CAPACITY);
          // Each admitted request saw a distinct remaining count: no two read the same state.
          expect(allowed.map((d) => d.remaining).sort((a, b) => a - b)).toEqual([0, 1, 2, 3, 4]);
        }
      });
    }
  });
}
