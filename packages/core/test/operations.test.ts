/**
 * The limiter's take and reserve methods: what they return, how they validate, and that a store which
 * does not announce the operation is refused before anything is counted.
 */
import { describe, expect, test } from 'vitest';
import { createLimiter, fixedWindow, tokenBucket, type SyncLimiter } from '../src/index.js';
import type { StoreCapabilities } from '../src/store/index.js';
import { AsyncMapStore, MapStore } from './support/map-store.js';
import { CLOCK_START } from './support/scenario.js';

/** The map store announcing both operations (it runs core's evaluate, which defines them). */
class TakeReserveStore extends MapStore {
  override readonly capabilities: StoreCapabilities & { readonly synchronous: true } = {
    synchronous: true,
    clock: 'client',
    operations: ['limit', 'reset', 'take', 'reserve'],
  };
}

function limiterOn(store: MapStore, now: { t: number }): SyncLimiter {
  return createLimiter({ store, rules: tokenBucket({ id: 'tb', capacity: 3, refillRate: 1, interval: '1s' }), clock: () => now.t });
}

describe('limiter.take and limiter.reserve', () => {
  test('take grants up to the cost and says how many; 0 granted is a denial with the wait for one unit', async () => {
    const now = { t: CLOCK_START };
    const limiter = limiterOn(new TakeReserveStore(), now);
    expect(await limiter.take('a', { cost: 2 })).toMatchObject({ allowed: true, granted: 2, remaining: 1 });
    expect(limiter.takeSync('a', { cost: 5 })).toMatchObject({ allowed: true, granted: 1, remaining: 0 });
    expect(limiter.takeSync('a', { cost: 5 })).toMatchObject({ allowed: false, granted: 0, reason: 'rate_limited', retryAfter: 1_000 });
    expect(limiter.takeSync('a', { cost: 0 })).toMatchObject({ allowed: true, granted: 0 });
    expect(limiter.takeSync('a')).toMatchObject({ allowed: false, granted: 0 });
  });

  test('reserve returns startAt, queues later requests behind the booking, and refuses beyond maxWait', async () => {
    const now = { t: CLOCK_START };
    const limiter = limiterOn(new TakeReserveStore(), now);
    for (let i = 0; i < 3; i++) expect(limiter.reserveSync('a', { maxWait: 0 })).toMatchObject({ allowed: true, startAt: CLOCK_START });
    expect(await limiter.reserve('a', { maxWait: 2_000 })).toMatchObject({ allowed: true, startAt: CLOCK_START + 1_000 });
    expect(limiter.reserveSync('a', { cost: 2, maxWait: 2_000 })).toMatchObject({
      allowed: false,
      startAt: CLOCK_START + 3_000,
      retryAfter: 3_000,
    });
    expect(limiter.limitSync('a')).toMatchObject({ allowed: false, retryAfter: 2_000 });
    expect(limiter.reserveSync('a', { cost: 4, maxWait: 1e9 })).toMatchObject({
      allowed: false,
      reason: 'cost_exceeds_limit',
      startAt: -1,
    });
  });

  test('a store that does not announce an operation is refused with UNSUPPORTED_OPERATION naming the operation, and nothing is counted', async () => {
    const store = new MapStore();
    const limiter = limiterOn(store, { t: CLOCK_START });
    await expect(limiter.take('a', { cost: 1 })).rejects.toMatchObject({
      code: 'UNSUPPORTED_OPERATION',
      message: expect.stringContaining('take'),
    });
    expect(() => limiter.reserveSync('a', { maxWait: 10 })).toThrow(
      expect.objectContaining({ code: 'UNSUPPORTED_OPERATION', message: expect.stringContaining('reserve') }),
    );
    expect(store.calls).toBe(0);
    const remote = createLimiter({ store: new AsyncMapStore(), rules: fixedWindow({ limit: 1, window: '1s' }) });
    await expect(remote.reserve('a', { maxWait: 10 })).rejects.toMatchObject({ code: 'UNSUPPORTED_OPERATION' });
  });

  test('options are validated with errors naming the field', async () => {
    const limiter = limiterOn(new TakeReserveStore(), { t: CLOCK_START });
    await expect(limiter.reserve('a', undefined as never)).rejects.toMatchObject({
      code: 'INVALID_OPTION',
      message: expect.stringContaining('maxWait'),
    });
    await expect(limiter.reserve('a', {} as never)).rejects.toMatchObject({
      code: 'INVALID_OPTION',
      message: expect.stringContaining('maxWait'),
    });
    for (const bad of [-1, 1.5, Number.NaN, Number.POSITIVE_INFINITY, '1 sec', '-1s', 2 ** 48]) {
      expect(() => limiter.reserveSync('a', { maxWait: bad as number })).toThrow(
        /reserve options: maxWait must be a duration from 0 to 140737488355328 ms/,
      );
    }
    expect(() => limiter.takeSync('a', { cost: -1 })).toThrow(expect.objectContaining({ code: 'INVALID_COST' }));
    expect(() => limiter.takeSync('a', { cost: 1, maxWait: 5 } as never)).toThrow(
      /take options: unknown option "maxWait"; accepted options are cost$/,
    );
    expect(() => limiter.reserveSync('a', { maxWait: 5, wait: 1 } as never)).toThrow(
      /reserve options: unknown option "wait"; accepted options are cost, maxWait$/,
    );
    // maxWait belongs to reserve only: limit() still refuses it rather than ignore it.
    expect(() => limiter.limitSync('a', { maxWait: 5 } as never)).toThrow(/limit options: unknown option "maxWait"/);
  });

  test('answers given without the store (limiter off, failure policy) still say granted and startAt', async () => {
    const off = createLimiter({
      store: new TakeReserveStore(),
      rules: tokenBucket({ capacity: 2, refillRate: 1 }),
      mode: 'off',
      clock: () => CLOCK_START,
    });
    expect(off.takeSync('a', { cost: 5 })).toMatchObject({ allowed: true, reason: 'disabled', granted: 5 });
    expect(off.reserveSync('a', { maxWait: 0 })).toMatchObject({ allowed: true, startAt: CLOCK_START });
    class Broken extends TakeReserveStore {
      override limit(): never {
        throw new Error('down');
      }
    }
    const denying = createLimiter({
      store: new Broken(),
      rules: tokenBucket({ capacity: 2, refillRate: 1 }),
      onStoreError: 'deny',
      clock: () => CLOCK_START,
    });
    expect(denying.takeSync('a', { cost: 2 })).toMatchObject({ allowed: false, degraded: true, granted: 0 });
    const refused = denying.reserveSync('a', { maxWait: 0 });
    expect(refused).toMatchObject({ allowed: false, degraded: true });
    expect(refused.startAt).toBe(CLOCK_START + refused.retryAfter);
    const allowing = createLimiter({ store: new Broken(), rules: tokenBucket({ capacity: 2, refillRate: 1 }), clock: () => CLOCK_START });
    expect(allowing.reserveSync('a', { maxWait: 0 })).toMatchObject({ allowed: true, degraded: true, startAt: CLOCK_START });
  });
});
