import { fixedWindow, gcra, slidingWindowLog, tokenBucket, type Store } from '@sluice/core';
import { describe, expect, it } from 'vitest';
import { itWithKeys, type TestContext } from '../context.js';

const PER_HOUR_2 = () => fixedWindow({ limit: 2, window: '1h' });

export function isolationTests(get: () => TestContext<Store>, inspect: boolean): void {
  describe('key isolation', () => {
    it('limiters with different names keep separate state for the same identity', async () => {
      const context = get();
      const a = context.limiter({ rules: PER_HOUR_2(), name: 'a' });
      const b = context.limiter({ rules: PER_HOUR_2(), name: 'b' });
      await a.limit('alice', 2);
      expect((await a.limit('alice')).allowed).toBe(false);
      expect(await b.limit('alice')).toMatchObject({ allowed: true, remaining: 1 });
    });

    itWithKeys(inspect, 'limiters with different names store under different keys, and the listing keeps to its prefix', async () => {
      const context = get();
      await context.limiter({ rules: PER_HOUR_2(), name: 'a' }).limit('alice');
      await context.limiter({ rules: PER_HOUR_2(), name: 'b' }).limit('alice');
      await context.limiter({ rules: PER_HOUR_2(), prefix: `${context.prefix}x` }).limit('alice');
      const keysA = await context.keysOf('alice', 'a');
      const keysB = await context.keysOf('alice', 'b');
      expect(keysA.length).toBeGreaterThan(0);
      expect(keysB.length).toBeGreaterThan(0);
      expect(keysA.filter((key) => keysB.includes(key))).toEqual([]);
      const keys = await context.keys();
      expect(
        keys.some((key) => key.startsWith(`${context.prefix}x:`)),
        'the other prefix must not be listed under this one',
      ).toBe(false);
    });

    it('the same limiter name under different prefixes keeps separate state', async () => {
      const context = get();
      const first = context.limiter({ rules: PER_HOUR_2() });
      const second = context.limiter({ rules: PER_HOUR_2(), prefix: `${context.prefix}x` });
      await first.limit('alice', 2);
      expect((await first.limit('alice')).allowed).toBe(false);
      expect(await second.limit('alice')).toMatchObject({ allowed: true, remaining: 1 });
    });

    it('two limiter instances with the same prefix, name and rules share state', async () => {
      const context = get();
      const first = context.limiter({ rules: PER_HOUR_2(), name: 'shared' });
      const second = context.limiter({ rules: PER_HOUR_2(), name: 'shared' });
      await first.limit('alice');
      expect(await second.limit('alice')).toMatchObject({ allowed: true, remaining: 0 });
      expect((await first.limit('alice')).allowed).toBe(false);
    });

    it('rules keep their state per rule id: a changed limit keeps the count, a changed id starts afresh', async () => {
      const limiter = get().limiter({ rules: fixedWindow({ id: 'api', limit: 3, window: '1h' }) });
      await limiter.limit('alice', 2);
      limiter.configure({ rules: fixedWindow({ id: 'api', limit: 5, window: '1h' }) });
      expect(await limiter.limit('alice')).toMatchObject({ allowed: true, remaining: 2, limit: 5 });
      limiter.configure({ rules: fixedWindow({ id: 'api-v2', limit: 5, window: '1h' }) });
      expect(await limiter.limit('alice')).toMatchObject({ allowed: true, remaining: 4 });
    });

    it('rules with the same algorithm and window but different ids do not share state', async () => {
      const limiter = get().limiter({
        rules: [
          tokenBucket({ id: 'reads', capacity: 2, refillRate: 1, interval: '1h' }),
          tokenBucket({ id: 'writes', capacity: 3, refillRate: 1, interval: '1h' }),
        ],
      });
      const decision = await limiter.limit('alice', 2);
      expect(decision.rules.map((r) => [r.id, r.remaining])).toEqual([
        ['reads', 0],
        ['writes', 1],
      ]);
    });

    it('reset forgets only the rule ids of the limiter that asks, not other limiters sharing the key', async () => {
      const context = get();
      const x = context.limiter({ rules: fixedWindow({ id: 'x', limit: 2, window: '1h' }), name: 'shared' });
      const y = context.limiter({ rules: gcra({ id: 'y', limit: 2, period: '1h' }), name: 'shared' });
      await x.limit('alice', 2);
      await y.limit('alice', 2);
      await x.reset('alice');
      expect(await x.limit('alice')).toMatchObject({ allowed: true, remaining: 1 });
      expect(await y.limit('alice')).toMatchObject({ allowed: false, remaining: 0 });
    });

    it('identities that look like key syntax or glob patterns never collide', async () => {
      const context = get();
      const identities = ['a', 'a:b', 'a}', '{a}', 'a}:x', 'a:', ':a', '*', 'a*', '?', '[a]', 'a\\b', '%', 'a b', 'A'];
      const limiter = context.limiter({ rules: slidingWindowLog({ limit: 1, window: '1h' }) });
      for (const identity of identities) {
        expect(await limiter.limit(identity), `first request of ${JSON.stringify(identity)} must find its own empty state`).toMatchObject({
          allowed: true,
        });
      }
      for (const identity of identities) expect((await limiter.limit(identity)).allowed).toBe(false);
      await limiter.reset('*');
      await limiter.reset('?');
      expect((await limiter.limit('*')).allowed, 'reset("*") must reset the identity "*"').toBe(true);
      for (const identity of identities.filter((id) => id !== '*' && id !== '?')) {
        expect((await limiter.peek(identity)).allowed, `reset("*") must not touch ${JSON.stringify(identity)}`).toBe(false);
      }
    });
  });
}
