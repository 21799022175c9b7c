import type { Store } from '@sluice/core';
import { createConcurrencyLimiter, type ConcurrencyLimiter, type LeaseDecision } from '@sluice/core/concurrency';
import { describe, expect, it } from 'vitest';
import { STORE_KEY_EXPIRY, itWithKeys, type GroupSettings, type TestContext } from '../context.js';
import { sleep } from '../time.js';

const SKIPPED = '(skipped: the store does not support leases)';
/** How long a store-clock test's leases live, and how long after their expiry it looks again (real time, ms). */
const REAL_TTL_MS = 250;
const GRACE_MS = 30;

function limiter(context: TestContext<Store>, limit: number, ttl = 10_000): ConcurrencyLimiter {
  return createConcurrencyLimiter({
    store: context.store,
    limit,
    ttl,
    prefix: context.prefix,
    clock: () => context.now,
    circuitBreaker: false,
    onStoreError: 'deny',
    timeout: context.options.timeoutMs,
  });
}

function held(decision: LeaseDecision): Pick<LeaseDecision, 'allowed' | 'reason' | 'held' | 'remaining' | 'retryAfter' | 'degraded'> {
  const { allowed, reason, held: count, remaining, retryAfter, degraded } = decision;
  return { allowed, reason, held: count, remaining, retryAfter, degraded };
}

/**
 * Concurrency leases (core's `evaluateLease()`): at most `limit` held per identity; a refusal says when the oldest
 * lease expires; release frees exactly its own slot, once; a lease past its ttl frees itself, and its late release
 * frees nobody else's slot; extend keeps a live lease only. A store that does not announce `lease` is refused by
 * `createConcurrencyLimiter`, and the vectors are reported as skipped. The vectors that drive the fake clock run on a
 * client-clock store; a store-clock store runs their real-time counterpart instead (a 250 ms ttl, waited out).
 */
export function leaseTests(get: () => TestContext<Store>, { leases, clientClock, inspect, keyExpiry }: GroupSettings): void {
  describe('concurrency leases', () => {
    it('the store announces lease exactly when the suite option capabilities.leases says so', () => {
      const { store } = get();
      expect(
        store.capabilities.operations.includes('lease'),
        "store.capabilities.operations must list 'lease' exactly when capabilities.leases is true",
      ).toBe(leases);
      if (leases) expect(typeof store.lease).toBe('function');
      else expect(() => limiter(get(), 1)).toThrow(/store must support leases/);
    });

    const run = leases ? it : it.skip;
    // Driving the fake clock: registered for a client-clock store only, like the other time-driven vectors.
    const timed = clientClock ? run : undefined;
    const title = (text: string): string => (leases ? text : `${text} ${SKIPPED}`);

    run(title('limit 2: two leases, a third refused until one is released; release is idempotent'), async () => {
      const context = get();
      const inFlight = limiter(context, 2);
      const a = await inFlight.acquire('alice');
      const b = await inFlight.acquire('alice');
      expect(held(a)).toMatchObject({ allowed: true, reason: 'ok', held: 1, remaining: 1, retryAfter: 0, degraded: false });
      expect(held(b)).toMatchObject({ allowed: true, held: 2, remaining: 0 });
      const c = await inFlight.acquire('alice');
      expect(held(c)).toMatchObject({ allowed: false, reason: 'concurrency_limited', held: 2, remaining: 0 });
      expect(c.retryAfter).toBeGreaterThan(0);
      expect(c.retryAfter).toBeLessThanOrEqual(10_000);
      expect(c.lease).toBeUndefined();
      // Another identity has slots of its own.
      expect((await inFlight.acquire('bob')).allowed).toBe(true);
      expect(await a.lease!.release()).toBe(true);
      expect(await a.lease!.release()).toBe(false);
      const d = await inFlight.acquire('alice');
      expect(held(d)).toMatchObject({ allowed: true, held: 2 });
      expect((await inFlight.acquire('alice')).allowed).toBe(false);
    });

    timed?.(title('a refusal says when the oldest lease expires; an expired lease frees its slot by itself'), async () => {
      const context = get();
      const inFlight = limiter(context, 2, 10_000);
      context.at(0);
      await inFlight.acquire('alice');
      context.at(4_000);
      await inFlight.acquire('alice');
      context.at(6_000);
      expect(held(await inFlight.acquire('alice'))).toEqual({
        allowed: false,
        reason: 'concurrency_limited',
        held: 2,
        remaining: 0,
        retryAfter: 4_000,
        degraded: false,
      });
      context.at(10_000); // the first lease's ttl is over
      expect(held(await inFlight.acquire('alice'))).toEqual({
        allowed: true,
        reason: 'ok',
        held: 2,
        remaining: 0,
        retryAfter: 0,
        degraded: false,
      });
    });

    timed?.(title("a release after the lease expired frees nothing, never someone else's slot"), async () => {
      const context = get();
      const inFlight = limiter(context, 1, 1_000);
      context.at(0);
      const first = await inFlight.acquire('alice');
      context.at(1_000);
      const second = await inFlight.acquire('alice');
      expect(second.allowed).toBe(true);
      expect(await first.lease!.release()).toBe(false);
      expect(held(await inFlight.acquire('alice'))).toMatchObject({ allowed: false, held: 1 });
      expect(await second.lease!.release()).toBe(true);
      expect((await inFlight.acquire('alice')).allowed).toBe(true);
    });

    timed?.(title('extend keeps a live lease for another ttl; an expired one is not revived'), async () => {
      const context = get();
      const inFlight = limiter(context, 1, 1_000);
      context.at(0);
      const lease = (await inFlight.acquire('alice')).lease!;
      context.at(900);
      expect(await lease.extend()).toBe(true);
      expect(lease.expiresAt).toBe(context.now + 1_000);
      context.at(1_500);
      expect((await inFlight.acquire('alice')).allowed).toBe(false);
      context.at(1_900);
      const next = await inFlight.acquire('alice');
      expect(next.allowed).toBe(true);
      expect(await lease.extend()).toBe(false);
    });

    run(title('4 identities × 12 acquires in flight hold exactly 3 each'), async () => {
      const inFlight = limiter(get(), 3);
      const identities = ['u0', 'u1', 'u2', 'u3'];
      const results = await Promise.all(
        identities.flatMap((identity) => Array.from({ length: 12 }, () => inFlight.acquire(identity).then((d) => ({ identity, d })))),
      );
      for (const identity of identities) {
        const mine = results.filter((r) => r.identity === identity).map((r) => r.d);
        expect(mine.every((d) => !d.degraded)).toBe(true);
        expect(mine.filter((d) => d.allowed)).toHaveLength(3);
      }
    });

    if (!clientClock) {
      run(title('store clock: a lease past its ttl frees its slot by itself; its late release and extend do nothing'), async () => {
        const inFlight = limiter(get(), 1, REAL_TTL_MS);
        const first = await inFlight.acquire('alice');
        expect(held(first)).toMatchObject({ allowed: true, held: 1, remaining: 0 });
        const refused = await inFlight.acquire('alice');
        expect(held(refused)).toMatchObject({ allowed: false, reason: 'concurrency_limited', held: 1, remaining: 0 });
        expect(refused.retryAfter, 'a refusal says when the lease expires').toBeGreaterThan(0);
        expect(refused.retryAfter).toBeLessThanOrEqual(REAL_TTL_MS);
        await sleep(refused.retryAfter + GRACE_MS);
        const second = await inFlight.acquire('alice');
        expect(held(second), 'the expired lease must have freed its slot').toMatchObject({ allowed: true, held: 1 });
        expect(await first.lease!.release(), 'an expired lease has nothing to release').toBe(false);
        expect(await first.lease!.extend(), 'an expired lease is not revived').toBe(false);
        expect((await inFlight.acquire('alice')).allowed, "the late release must not free the second lease's slot").toBe(false);
        expect(await second.lease!.release()).toBe(true);
      });
    }

    if (inspect && leases) {
      if (clientClock && keyExpiry === 'client') {
        itWithKeys(inspect, 'the lease record expires with its latest lease, and goes when the last one is released', async () => {
          const context = get();
          const inFlight = limiter(context, 2, 1_000);
          context.at(0);
          const a = await inFlight.acquire('alice');
          expect(await context.keysOf('alice')).toHaveLength(1);
          await a.lease!.release();
          expect(await context.keysOf('alice')).toHaveLength(0);
          await inFlight.acquire('alice');
          context.at(1_000);
          expect(await context.keysOf('alice')).toHaveLength(0);
        });
      } else if (clientClock) {
        itWithKeys(
          inspect,
          `the lease record goes when the last lease is released, and outlives the fake ttl ${STORE_KEY_EXPIRY}`,
          async () => {
            const context = get();
            const inFlight = limiter(context, 2, 1_000);
            context.at(0);
            const a = await inFlight.acquire('alice');
            expect(await context.keysOf('alice')).toHaveLength(1);
            await a.lease!.release();
            expect(await context.keysOf('alice')).toHaveLength(0);
            await inFlight.acquire('alice');
            context.at(1_000);
            expect(await context.keysOf('alice'), "keyExpiry 'store': the fake clock must not remove the record").toHaveLength(1);
          },
        );
      } else {
        itWithKeys(inspect, 'store clock: the lease record goes when the last lease is released, and by itself after its ttl', async () => {
          const context = get();
          const inFlight = limiter(context, 2, REAL_TTL_MS);
          const a = await inFlight.acquire('alice');
          expect(await context.keysOf('alice')).toHaveLength(1);
          await a.lease!.release();
          expect(await context.keysOf('alice')).toHaveLength(0);
          const b = await inFlight.acquire('alice');
          expect(await context.keysOf('alice')).toHaveLength(1);
          await sleep(b.lease!.expiresAt - b.now + GRACE_MS);
          expect(await context.keysOf('alice'), 'the record must be gone once its latest lease expired').toHaveLength(0);
        });
      }
    }
  });
}
