import { fixedWindow, isSluiceError, tokenBucket, type SluiceError, type Store } from '@sluice/core';
import type { LimitRequest, LimitResult } from '@sluice/core/store';
import { isPromiseLike } from '@sluice/core/internal';
import { describe, expect, it } from 'vitest';
import type { TestContext } from '../context.js';

export function capabilityTests(get: () => TestContext<Store>): void {
  describe('capabilities and the raw contract', () => {
    it('declares the clock and synchronicity the suite was told, and implements what it announces', () => {
      const { store, options } = get();
      const capabilities = store.capabilities;
      expect(capabilities.clock, 'store.capabilities.clock must match the suite option clock').toBe(options.clock);
      expect(capabilities.synchronous, 'store.capabilities.synchronous must match the suite option capabilities.synchronous').toBe(
        options.synchronous,
      );
      expect(capabilities.operations).toContain('limit');
      expect(capabilities.operations).toContain('reset');
      expect(typeof store.limit).toBe('function');
      expect(typeof store.reset).toBe('function');
      for (const operation of ['take', 'reserve'] as const) {
        expect(
          capabilities.operations.includes(operation),
          `store.capabilities.operations must list '${operation}' exactly when the suite option capabilities.operations does`,
        ).toBe(options.operations.includes(operation));
      }
    });

    it('answers a raw request atomically, with its time and one outcome per rule in request order', async () => {
      const context = get();
      const rules = [
        tokenBucket({ id: 'b', capacity: 4, refillRate: 1, interval: '1h' }),
        fixedWindow({ id: 'a', limit: 3, window: '1h' }),
      ];
      const key = `${context.prefix}:raw:{alice}`;
      const send = async (cost: number, operation: LimitRequest['operation']): Promise<LimitResult> => {
        const request: LimitRequest = { key, rules, cost, operation, now: context.now };
        const pending = context.store.limit(request);
        if (context.options.synchronous) {
          expect(isPromiseLike(pending), 'a synchronous store must answer limit() without a promise').toBe(false);
        }
        const result = await pending;
        expect(Number.isSafeInteger(result.now), 'LimitResult.now must be integer epoch ms').toBe(true);
        if (context.clientClock) expect(result.now, 'a client-clock store must report request.now').toBe(request.now);
        return result;
      };
      const summary = (result: LimitResult) => result.outcomes.map((o) => [o.id, o.allowed, o.limit, o.remaining]);
      expect(summary(await send(2, 'consume'))).toEqual([
        ['b', true, 4, 2],
        ['a', true, 3, 1],
      ]);
      // 'a' denies, so 'b' must not be charged: it still reports 2 left, and so does the peek after.
      expect(summary(await send(2, 'consume'))).toEqual([
        ['b', true, 4, 2],
        ['a', false, 3, 1],
      ]);
      expect(summary(await send(2, 'peek'))).toEqual([
        ['b', true, 4, 2],
        ['a', false, 3, 1],
      ]);
      await context.store.reset(key, ['a']);
      expect(summary(await send(0, 'peek')), 'reset(key, ["a"]) must forget rule a only').toEqual([
        ['b', true, 4, 2],
        ['a', true, 3, 3],
      ]);
      await context.store.reset(key, ['b']);
      expect(summary(await send(0, 'peek'))).toEqual([
        ['b', true, 4, 4],
        ['a', true, 3, 3],
      ]);
    });
  });
}

/** limitSync exists exactly for synchronous stores; asynchronous ones get a clear error instead of a promise. */
export function syncCapabilityTest(get: () => TestContext<Store>, synchronous: boolean): void {
  it(
    synchronous
      ? 'limitSync, peekSync and refundSync answer without a promise'
      : 'limitSync refuses an asynchronous store with UNSUPPORTED_OPERATION',
    () => {
      const context = get();
      const limiter = context.rawLimiter({ rules: fixedWindow({ limit: 2, window: '1h' }) }) as unknown as {
        limitSync(identity: string): unknown;
        peekSync(identity: string): unknown;
        refundSync(identity: string): unknown;
      };
      if (synchronous) {
        for (const answer of [limiter.limitSync('alice'), limiter.peekSync('alice'), limiter.refundSync('alice')]) {
          expect(isPromiseLike(answer)).toBe(false);
          expect(answer).toMatchObject({ allowed: true, degraded: false });
        }
      } else {
        let caught: unknown;
        try {
          limiter.limitSync('alice');
        } catch (error) {
          caught = error;
        }
        expect(isSluiceError(caught) && (caught as SluiceError).code).toBe('UNSUPPORTED_OPERATION');
      }
    },
  );
}
