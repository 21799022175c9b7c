import { fixedWindow, leakyBucket, slidingWindowCounter, type Store } from '@sluice/core';
import { describe, expect, it } from 'vitest';
import { itWithKeys, type TestContext } from '../context.js';

export function resetTests(get: () => TestContext<Store>, inspect: boolean): void {
  describe('reset', () => {
    it('forgets one identity: a full allowance again, its state removed, other identities untouched', async () => {
      const limiter = get().limiter({ rules: slidingWindowCounter({ limit: 3, window: '1h' }) });
      await limiter.limit('alice', 3);
      await limiter.limit('bob', 3);
      await limiter.reset('alice');
      expect(await limiter.limit('alice')).toMatchObject({ allowed: true, remaining: 2 });
      expect(await limiter.limit('bob')).toMatchObject({ allowed: false, remaining: 0 });
    });

    it('resets every rule of a compound limiter', async () => {
      const limiter = get().limiter({
        rules: [
          fixedWindow({ id: 'hourly', limit: 3, window: '1h' }),
          leakyBucket({ id: 'burst', capacity: 2, leakRate: 1, interval: '1h' }),
        ],
      });
      await limiter.limit('alice', 2);
      expect((await limiter.limit('alice')).allowed).toBe(false);
      await limiter.reset('alice');
      const decision = await limiter.limit('alice', 2);
      expect(decision.rules.map((r) => [r.id, r.allowed, r.remaining])).toEqual([
        ['hourly', true, 1],
        ['burst', true, 0],
      ]);
    });

    it('is a no-op for an identity never seen, and twice in a row', async () => {
      const limiter = get().limiter({ rules: fixedWindow({ limit: 3, window: '1h' }) });
      await limiter.reset('nobody');
      await limiter.reset('nobody');
      expect(await limiter.limit('nobody')).toMatchObject({ allowed: true, remaining: 2 });
    });

    itWithKeys(inspect, "removes the identity's stored state, keeps others', and creates none for an identity never seen", async () => {
      const context = get();
      const limiter = context.limiter({ rules: slidingWindowCounter({ limit: 3, window: '1h' }) });
      await limiter.reset('nobody');
      expect(await context.keys(), 'reset of an identity never seen must write nothing').toEqual([]);
      await limiter.limit('alice', 3);
      await limiter.limit('bob', 3);
      expect((await context.keysOf('alice')).length, 'consumed state must be stored').toBeGreaterThan(0);
      await limiter.reset('alice');
      expect(await context.keysOf('alice'), 'reset must remove the identity state').toEqual([]);
      expect((await context.keysOf('bob')).length, "reset must keep other identities' state").toBeGreaterThan(0);
    });
  });
}
