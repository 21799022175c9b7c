import type { Store } from '@sluice/core';
import { describe, expect, it } from 'vitest';
import { ALGORITHMS } from '../algorithms.js';
import type { TestContext } from '../context.js';
import { sleep } from '../time.js';

/** How long after the store's own resetAt a store-clock test looks again (expiry is not instantaneous everywhere). */
const GRACE_MS = 30;
const WINDOW_MS = 150;

export function expiryTests(get: () => TestContext<Store>, clientClock: boolean): void {
  describe('expiry', () => {
    if (clientClock) {
      for (const algorithm of ALGORITHMS) {
        it(`${algorithm.title}: state lives exactly until resetAt, then a fresh full allowance (a peek does not extend it)`, async () => {
          const context = get();
          const limiter = context.limiter({ rules: algorithm.rule(3, 60_000) });
          context.at('0:10');
          const spent = await limiter.limit('alice', 3);
          expect(spent.allowed).toBe(true);
          const resetAt = spent.resetAt;
          expect(resetAt, 'an exhausted rule must report a resetAt in the future').toBeGreaterThan(context.now);
          const held = await context.keysOf('alice');
          if (held !== undefined) expect(held.length, 'consumed state must be stored').toBeGreaterThan(0);

          context.setNow(resetAt - 1);
          const before = await limiter.peek('alice');
          expect(before.remaining, 'one ms before resetAt the rule is not full yet').toBeLessThan(3);
          const stillHeld = await context.keysOf('alice');
          if (stillHeld !== undefined) expect(stillHeld.length, 'state must not expire before resetAt').toBeGreaterThan(0);

          context.setNow(resetAt);
          const gone = await context.keysOf('alice');
          if (gone !== undefined) expect(gone, 'state must be gone at resetAt (its ttl), and peeks must not have extended it').toEqual([]);
          const fresh = await limiter.peek('alice');
          expect(fresh.remaining).toBe(3);
          const first = await limiter.limit('alice');
          expect([first.allowed, first.remaining]).toEqual([true, 2]);

          // Ten years idle: no overflow, no stale state.
          context.setNow(resetAt + 10 * 365 * 86_400_000);
          const later = await limiter.limit('alice', 3);
          expect([later.allowed, later.remaining]).toEqual([true, 0]);
        });
      }

      it('compound rules: the identity is kept until its longest-lived rule expires', async () => {
        const context = get();
        const [short, long] = [ALGORITHMS[0]!.rule(2, 1_000), ALGORITHMS[3]!.rule(2, 60_000)];
        const limiter = context.limiter({ rules: [short, long] });
        context.at('0:00');
        await limiter.limit('alice', 2);
        context.at('0:01');
        const halfway = await limiter.peek('alice');
        expect(halfway.rules.map((r) => r.remaining)).toEqual([2, 0]);
        const held = await context.keysOf('alice');
        if (held !== undefined) expect(held.length).toBeGreaterThan(0);
        context.at('1:00');
        const gone = await context.keysOf('alice');
        if (gone !== undefined) expect(gone).toEqual([]);
        expect((await limiter.limit('alice', 2)).allowed).toBe(true);
      });
    } else {
      it('every algorithm: state is gone shortly after the store-reported resetAt, then a fresh full allowance', async () => {
        const context = get();
        // 150 ms windows, run side by side: the whole test waits at most about a third of a second.
        await Promise.all(
          ALGORITHMS.map(async (algorithm, i) => {
            const name = `expiry${i}`;
            const limiter = context.limiter({ rules: algorithm.rule(2, WINDOW_MS), name });
            const sentAt = Date.now();
            const spent = await limiter.limit('alice', 2);
            expect([algorithm.title, spent.allowed, spent.remaining]).toEqual([algorithm.title, true, 0]);
            const waitMs = spent.resetAt - spent.now;
            expect(waitMs, `${algorithm.title}: an exhausted rule must report a resetAt in the future`).toBeGreaterThan(0);
            // The sliding counter's previous window still weighs for up to one more window.
            expect(waitMs, `${algorithm.title}: resetAt must lie within two windows`).toBeLessThanOrEqual(2 * WINDOW_MS);
            const held = await context.keysOf('alice', name);
            // A window that happened to end a few ms after the request may already be gone on a loaded machine:
            // the state must be there only if the key listing answered before its ttl could have run out.
            const listedInTime = Date.now() - sentAt < waitMs;
            if (held !== undefined && listedInTime) {
              expect(held.length, `${algorithm.title}: consumed state must be stored`).toBeGreaterThan(0);
            }
            await sleep(waitMs + GRACE_MS);
            const gone = await context.keysOf('alice', name);
            if (gone !== undefined) expect(gone, `${algorithm.title}: state must be gone after its ttl`).toEqual([]);
            const fresh = await limiter.limit('alice');
            expect([algorithm.title, fresh.allowed, fresh.remaining]).toEqual([algorithm.title, true, 1]);
          }),
        );
      });
    }
  });
}
