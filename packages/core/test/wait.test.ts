/**
 * limiter.wait / schedule (outbound calls and jobs): a slot booked with reserve, then a sleep until its start. Fake
 * timers and a fake clock: queued waiters start one slot apart in booking order (no polling: one store call each), a
 * slot beyond maxWait is refused with nothing booked, an abort gives a bucket's booking back.
 */
import { afterEach, beforeEach, describe, expect, test, vi } from 'vitest';
import { createLimiter, fixedWindow, gcra, tokenBucket, type Rule } from '../src/index.js';
import type { LimitRequest, LimitResult, Store } from '../src/store/index.js';
import { MapStore } from './support/map-store.js';

/** The reference store (core's evaluate) behind promises, announcing reserve. */
class ReserveStore implements Store {
  readonly capabilities = { synchronous: false, clock: 'client', operations: ['limit', 'reset', 'take', 'reserve'] } as const;
  private readonly inner = new MapStore();
  limit(request: LimitRequest): Promise<LimitResult> {
    return Promise.resolve(this.inner.limit(request));
  }
  reset(key: string, ids: readonly string[]): void {
    this.inner.reset(key, ids);
  }
}

const CLOCK_START = 1_700_000_000_000;

function setup(rules: Rule | Rule[]) {
  const clock = { now: CLOCK_START };
  const store = new ReserveStore();
  const limiter = createLimiter({ store, rules, clock: () => clock.now });
  return { clock, store, limiter };
}

beforeEach(() => {
  vi.useFakeTimers();
});

afterEach(() => {
  vi.useRealTimers();
});

describe('wait', () => {
  test('waiters queue one slot apart, in the order they booked, with one store call each', async () => {
    const { clock, limiter } = setup(gcra({ limit: 10, period: '1s', burst: 1 }));
    const started: Array<[number, number]> = [];
    const waits = Array.from({ length: 5 }, (_, i) => limiter.wait('api', { maxWait: '10s' }).then(() => started.push([i, clock.now])));
    // Let the five bookings through the store, then move time and timers together, 50 ms at a time.
    await vi.advanceTimersByTimeAsync(0);
    for (let t = 0; t < 500; t += 50) {
      clock.now += 50;
      await vi.advanceTimersByTimeAsync(50);
    }
    await Promise.all(waits);
    expect(started.map(([i]) => i)).toEqual([0, 1, 2, 3, 4]);
    expect(started.map(([, at]) => at - CLOCK_START)).toEqual([0, 100, 200, 300, 400]);
  });

  test('a slot beyond maxWait is refused with WAIT_TOO_LONG and nothing is booked', async () => {
    const { limiter } = setup(tokenBucket({ capacity: 1, refillRate: 1, interval: '1s' }));
    await limiter.wait('api', { maxWait: 0 });
    await expect(limiter.wait('api', { maxWait: 500 })).rejects.toMatchObject({ code: 'WAIT_TOO_LONG' });
    // Nothing booked by the refusal: the next slot is still 1 s away, not 2.
    const d = await limiter.reserve('api', { maxWait: '5s' });
    expect(d.startAt! - d.now).toBe(1000);
    await expect(limiter.wait('api', { cost: 5, maxWait: '1h' })).rejects.toThrow(/can never fit/);
  });

  test('an abort rejects with ABORTED and gives a bucket booking back', async () => {
    const { limiter } = setup(tokenBucket({ capacity: 1, refillRate: 1, interval: '1s' }));
    await limiter.wait('api', { maxWait: 0 });
    const controller = new AbortController();
    const waiting = limiter.wait('api', { maxWait: '5s', signal: controller.signal });
    const outcome = waiting.then(
      () => 'resolved',
      (error: { code?: string }) => error.code,
    );
    await vi.advanceTimersByTimeAsync(100);
    controller.abort();
    await vi.advanceTimersByTimeAsync(0);
    expect(await outcome).toBe('ABORTED');
    // The aborted booking was given back: the next slot is 1 s away again, not 2.
    const d = await limiter.reserve('api', { maxWait: '5s' });
    expect(d.startAt! - d.now).toBe(1000);
    await expect(limiter.wait('api', { maxWait: '1s', signal: AbortSignal.abort() })).rejects.toMatchObject({ code: 'ABORTED' });
  });

  test("a window's booking is not refunded on abort (the refund would land in the current window, not the booked one)", async () => {
    const { clock, limiter } = setup(fixedWindow({ limit: 1, window: '1s' }));
    clock.now = Math.ceil(CLOCK_START / 1000) * 1000;
    await limiter.wait('api', { maxWait: 0 });
    const controller = new AbortController();
    const waiting = limiter.wait('api', { maxWait: '2s', signal: controller.signal }).catch((error: { code?: string }) => error.code);
    await vi.advanceTimersByTimeAsync(10);
    controller.abort();
    expect(await waiting).toBe('ABORTED');
    const d = await limiter.reserve('api', { maxWait: '5s' });
    expect(d.startAt! - d.now).toBe(2000); // the next window stays booked
  });

  test("a store failure under onStoreError: 'deny' rejects with the store's error, not WAIT_TOO_LONG", async () => {
    const failing: Store = {
      capabilities: { synchronous: false, clock: 'client', operations: ['limit', 'reset', 'take', 'reserve'] },
      limit: () => Promise.reject(new Error('connection reset')),
      reset: () => undefined,
    };
    const limiter = createLimiter({
      store: failing,
      rules: gcra({ limit: 10, period: '1s' }),
      onStoreError: 'deny',
      circuitBreaker: false,
      clock: () => CLOCK_START,
    });
    await expect(limiter.wait('api', { maxWait: '30s' })).rejects.toMatchObject({ code: 'STORE_ERROR' });
  });

  test('schedule runs the function once its slot starts, and bad options are refused clearly', async () => {
    const { clock, limiter } = setup(gcra({ limit: 2, period: '1s', burst: 1 }));
    const results = [
      limiter.schedule('api', () => 'first', { maxWait: '5s' }),
      limiter.schedule('api', async () => 'second', { maxWait: '5s' }),
    ];
    await vi.advanceTimersByTimeAsync(0);
    clock.now += 500;
    await vi.advanceTimersByTimeAsync(500);
    expect(await Promise.all(results)).toEqual(['first', 'second']);
    await expect(limiter.wait('api', {} as never)).rejects.toThrow(/maxWait/);
    await expect(limiter.schedule('api', 'not a function' as never, { maxWait: 0 })).rejects.toThrow(/fn must be a function/);
  });
});
