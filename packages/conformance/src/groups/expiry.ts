import type { Store } from '@sluice/core';
import { describe, expect, it } from 'vitest';
import { ALGORITHMS, HOUR } from '../algorithms.js';
import { STORE_KEY_EXPIRY, itWithKeys, type GroupSettings, type TestContext } from '../context.js';
import { sleep } from '../time.js';
import type { TrackedLimiter } from '../tracked-limiter.js';

/** How long after the store's own resetAt a store-clock test looks again (expiry is not instantaneous everywhere). */
const GRACE_MS = 30;
const WINDOW_MS = 150;

/** A 1 s fixed window and a 60 s token bucket, both spent at 0:00, looked at from 0:01. */
async function spendCompound(context: TestContext<Store>): Promise<TrackedLimiter> {
  const limiter = context.limiter({ rules: [ALGORITHMS[0]!.rule(2, 1_000), ALGORITHMS[3]!.rule(2, 60_000)] });
  context.at('0:00');
  await limiter.limit('alice', 2);
  context.at('0:01');
  return limiter;
}

/**
 * Expiry of state: by the fake clock on a client-clock store (at resetAt exactly, and its keys with it unless they
 * expire by the store's own clock, `keyExpiry: 'store'`), by real time on a store-clock store.
 */
export function expiryTests(get: () => TestContext<Store>, { clientClock, inspect, keyExpiry }: GroupSettings): void {
  const keysByFakeClock = keyExpiry === 'client';
  describe('expiry', () => {
    if (clientClock) {
      for (const algorithm of ALGORITHMS) {
        it(`${algorithm.title}: a fresh full allowance exactly at resetAt, not one ms before (a peek does not extend it)`, async () => {
          const context = get();
          const limiter = context.limiter({ rules: algorithm.rule(3, 60_000) });
          context.at('0:10');
          const spent = await limiter.limit('alice', 3);
          expect(spent.allowed).toBe(true);
          const resetAt = spent.resetAt;
          expect(resetAt, 'an exhausted rule must report a resetAt in the future').toBeGreaterThan(context.now);

          context.setNow(resetAt - 1);
          const before = await limiter.peek('alice');
          expect(before.remaining, 'one ms before resetAt the rule is not full yet').toBeLessThan(3);

          context.setNow(resetAt);
          const fresh = await limiter.peek('alice');
          expect(fresh.remaining).toBe(3);
          const first = await limiter.limit('alice');
          expect([first.allowed, first.remaining]).toEqual([true, 2]);

          // Ten years idle: no overflow, no stale state.
          context.setNow(resetAt + 10 * 365 * 86_400_000);
          const later = await limiter.limit('alice', 3);
          expect([later.allowed, later.remaining]).toEqual([true, 0]);
        });

        if (keysByFakeClock) {
          itWithKeys(
            inspect,
            `${algorithm.title}: state lives exactly until resetAt, then it is gone (a peek does not extend it)`,
            async () => {
              const context = get();
              const limiter = context.limiter({ rules: algorithm.rule(3, 60_000) });
              context.at('0:10');
              const { resetAt } = await limiter.limit('alice', 3);
              expect((await context.keysOf('alice')).length, 'consumed state must be stored').toBeGreaterThan(0);
              context.setNow(resetAt - 1);
              await limiter.peek('alice');
              expect((await context.keysOf('alice')).length, 'state must not expire before resetAt').toBeGreaterThan(0);
              context.setNow(resetAt);
              expect(await context.keysOf('alice'), 'state must be gone at resetAt (its ttl), and peeks must not have extended it').toEqual(
                [],
              );
            },
          );
        } else {
          itWithKeys(
            inspect,
            `${algorithm.title}: state is stored and outlives the fake resetAt, where it counts for nothing ${STORE_KEY_EXPIRY}`,
            async () => {
              const context = get();
              const limiter = context.limiter({ rules: algorithm.rule(3, 60_000) });
              context.at('0:10');
              const { resetAt } = await limiter.limit('alice', 3);
              expect((await context.keysOf('alice')).length, 'consumed state must be stored').toBeGreaterThan(0);
              context.setNow(resetAt);
              expect(
                (await context.keysOf('alice')).length,
                "keyExpiry 'store': the store's own clock removes keys, so the fake clock passing resetAt must leave them",
              ).toBeGreaterThan(0);
              expect((await limiter.peek('alice')).remaining, 'state past its resetAt must count for nothing').toBe(3);
            },
          );
        }
      }

      it('compound rules: the longest-lived rule still counts after a shorter one is full again', async () => {
        const context = get();
        const limiter = await spendCompound(context);
        const halfway = await limiter.peek('alice');
        expect(halfway.rules.map((r) => r.remaining)).toEqual([2, 0]);
        context.at('1:00');
        expect((await limiter.limit('alice', 2)).allowed).toBe(true);
      });

      if (keysByFakeClock) {
        itWithKeys(inspect, 'compound rules: the identity is kept until its longest-lived rule expires', async () => {
          const context = get();
          const limiter = await spendCompound(context);
          await limiter.peek('alice');
          expect((await context.keysOf('alice')).length).toBeGreaterThan(0);
          context.at('1:00');
          expect(await context.keysOf('alice')).toEqual([]);
        });
      } else {
        itWithKeys(
          inspect,
          `compound rules: the identity is kept while its longest-lived rule counts, and past its fake expiry ${STORE_KEY_EXPIRY}`,
          async () => {
            const context = get();
            const limiter = await spendCompound(context);
            await limiter.peek('alice');
            expect((await context.keysOf('alice')).length, 'the 60 s rule still counts at 0:01').toBeGreaterThan(0);
            context.at('1:00');
            expect(
              (await context.keysOf('alice')).length,
              "keyExpiry 'store': the store's own clock removes keys, so the fake clock passing 1:00 must leave them",
            ).toBeGreaterThan(0);
          },
        );
      }
    } else {
      it('every algorithm: a fresh full allowance once the store-reported resetAt has passed', async () => {
        const context = get();
        // 150 ms windows, run side by side: the whole test waits at most about a third of a second.
        await Promise.all(
          ALGORITHMS.map(async (algorithm, i) => {
            const name = `expiry${i}`;
            const limiter = context.limiter({ rules: algorithm.rule(2, WINDOW_MS), name });
            const spent = await limiter.limit('alice', 2);
            expect([algorithm.title, spent.allowed, spent.remaining]).toEqual([algorithm.title, true, 0]);
            const waitMs = spent.resetAt - spent.now;
            expect(waitMs, `${algorithm.title}: an exhausted rule must report a resetAt in the future`).toBeGreaterThan(0);
            // The sliding counter's previous window still weighs for up to one more window.
            expect(waitMs, `${algorithm.title}: resetAt must lie within two windows`).toBeLessThanOrEqual(2 * WINDOW_MS);
            await sleep(waitMs + GRACE_MS);
            const fresh = await limiter.limit('alice');
            expect([algorithm.title, fresh.allowed, fresh.remaining]).toEqual([algorithm.title, true, 1]);
          }),
        );
      });

      itWithKeys(inspect, 'every algorithm: consumed state is stored, and gone shortly after the store-reported resetAt', async () => {
        const context = get();
        await Promise.all(
          ALGORITHMS.map(async (algorithm, i) => {
            // Stored: an hour-long rule, so the listing finds the state however slow the machine is.
            const held = `held${i}`;
            await context.limiter({ rules: algorithm.rule(2, HOUR), name: held }).limit('alice', 2);
            expect((await context.keysOf('alice', held)).length, `${algorithm.title}: consumed state must be stored`).toBeGreaterThan(0);
            // Gone: a 150 ms rule, looked at after its resetAt (waiting longer on a slow machine changes nothing).
            const name = `expiry${i}`;
            const spent = await context.limiter({ rules: algorithm.rule(2, WINDOW_MS), name }).limit('alice', 2);
            await sleep(spent.resetAt - spent.now + GRACE_MS);
            expect(await context.keysOf('alice', name), `${algorithm.title}: state must be gone after its ttl`).toEqual([]);
          }),
        );
      });
    }
  });
}
