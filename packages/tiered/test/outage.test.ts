/**
 * When the shared store fails (package README, "When the shared store fails"): each instance refuses in the window
 * the outage began in, answers on its local share (limit ÷ instances) from the next, and finishes on the share the
 * window the outage ended in; a bucket has no window to guard, so the share answers it at once; a remote store that
 * answers too late is not down, and is refused rather than answered on the share.
 */
import { describe, expect, test } from 'vitest';
import { createLimiter, fixedWindow, tokenBucket, type Decision } from '@sluice/core';
import type { LimitRequest, LimitResult } from '@sluice/core/store';
import { SharedStore, TestClock, tier, tierFixture, windowStartAfterClockStart } from './support.js';

describe('failures', () => {
  test('the remote store down: refused in the window the outage began in, the local share from the next, the shared state after the window it ended in', async () => {
    for (const strategy of ['deny-cache', 'lease', 'async'] as const) {
      const { clock, shared, store, limiter } = tierFixture(strategy, { start: windowStartAfterClockStart(60_000) });
      const limited = limiter(fixedWindow({ limit: 40, window: '1m' }));
      expect((await limited.limit('warm')).degraded).toBe(false);
      shared.failing = true;
      // The window the outage began in: the shared store may have admitted its whole limit already.
      const first: Decision[] = [];
      for (let i = 0; i < 10; i++) first.push(await limited.limit(`down-${strategy}`));
      expect(first.every((d) => !d.allowed && d.degraded)).toBe(true);
      expect(first[0]!.error).toMatchObject({ code: 'STORE_ERROR' });
      expect(first[0]!.resetAt).toBe(clock.now + 60_000);
      clock.now += 60_000;
      const during: Decision[] = [];
      for (let i = 0; i < 30; i++) during.push(await limited.limit(`down-${strategy}`));
      // limit 40 ÷ 4 instances: this instance admits 10 on its own.
      expect(during.filter((d) => d.allowed)).toHaveLength(10);
      expect(during.every((d) => d.degraded)).toBe(true);
      expect(during[29]!.error).toMatchObject({ code: 'CIRCUIT_OPEN' });
      shared.failing = false;
      clock.now += 600; // past the 500 ms cooldown: the store answers again, and the share finishes this window
      await limited.limit(`probe-${strategy}`);
      expect(await limited.limit(`down-${strategy}`)).toMatchObject({ allowed: false, degraded: true });
      clock.now += 60_000;
      expect(await limited.limit(`down-${strategy}`)).toMatchObject({ allowed: true, degraded: false });
      await store.close();
    }
  });

  test('after an outage, the share finishes the window even when calls waited on a batch taken while it did, and a second short outage does not cut it short', async () => {
    const { clock, shared, store, limiter } = tierFixture('lease', { start: windowStartAfterClockStart(60_000) });
    const limited = limiter(fixedWindow({ limit: 400, window: '1m' }));
    expect((await limited.limit('warm')).degraded).toBe(false);
    shared.failing = true;
    for (let i = 0; i < 5; i++) await limited.limit('down');
    clock.now += 60_000; // the outage goes on into the next window: the shares answer it
    expect(await limited.limit('down')).toMatchObject({ allowed: true, degraded: true });
    shared.failing = false;
    clock.now += 600; // past the breaker's cooldown: the store answers again
    // Calls in flight together for one identity: one takes a batch, the others wait for it. The batch is taken while
    // the share finishes the window, so every one of them is answered on the share; none may read that as a new outage.
    const together = await Promise.all(Array.from({ length: 8 }, () => limited.limit('burst')));
    // Answered on the share (limit 400 ÷ 4 instances): all 8 admitted, none refused as if the store had gone down again.
    expect(together.map((d) => [d.allowed, d.degraded])).toEqual(Array.from({ length: 8 }, () => [true, true]));
    // Another identity, later in the same window: the store answers, but the other instances may still be on their
    // shares (the store may have restarted empty), so the share still decides.
    clock.now += 1000;
    expect(await limited.limit('later')).toMatchObject({ degraded: true });
    // A short second outage inside the window being finished, seen by calls that reach the store meanwhile (a bucket
    // has no window to finish), and the store back again: the first outage's window is still finished on the share.
    const bucket = limiter(tokenBucket({ capacity: 100, refillRate: 1, interval: '1s' }));
    shared.failing = true;
    for (let i = 0; i < 4; i++) expect((await bucket.limit('blip')).degraded).toBe(true);
    shared.failing = false;
    clock.now += 600;
    expect(await bucket.limit('blip')).toMatchObject({ degraded: false });
    expect(await limited.limit('after-blip')).toMatchObject({ degraded: true });
    clock.now = Math.ceil(clock.now / 60_000) * 60_000 + 60_000; // the window after the next: the shared state again
    expect(await limited.limit('after-blip')).toMatchObject({ allowed: true, degraded: false });
    await store.close();
  });

  test('a bucket has no window to guard: the local share answers it from the first connection error', async () => {
    const { shared, limiter } = tierFixture('deny-cache');
    const limited = limiter(tokenBucket({ capacity: 8, refillRate: 1, interval: '1h' }));
    shared.failing = true;
    const during: Decision[] = [];
    for (let i = 0; i < 4; i++) during.push(await limited.limit('b'));
    // capacity 8 ÷ 4 instances: this instance admits 2 on its own, every answer degraded, the first one already.
    expect(during.map((d) => d.allowed)).toEqual([true, true, false, false]);
    expect(during.every((d) => d.degraded)).toBe(true);
    expect(during[0]!.error).toMatchObject({ code: 'STORE_ERROR' });
  });

  test('a timeout is not an outage: a remote store that answers too late is refused, never answered on the local share; one that errors is', async () => {
    /** The shared store, answering each call 200 ms late (real time): past the tier's 20 ms timeout. */
    class LateStore extends SharedStore {
      override limit(request: LimitRequest): Promise<LimitResult> {
        const answer = super.limit(request);
        // This package's tests see no Node or DOM types (edge safety): the runtime's timer, typed here.
        const timers = globalThis as unknown as { setTimeout(callback: () => void, ms: number): unknown };
        return new Promise((resolve) => timers.setTimeout(() => resolve(answer), 200));
      }
    }
    const clock = new TestClock(windowStartAfterClockStart(60_000));
    const options = { timeout: '20ms', circuitBreaker: false } as const;
    const bucketOver = (remote: SharedStore) =>
      createLimiter({
        store: tier(remote, 'deny-cache', clock.read, options),
        rules: [tokenBucket({ capacity: 8, refillRate: 1, interval: '1h' })],
        clock: clock.read,
      });
    const late = bucketOver(new LateStore());
    const failing = new SharedStore();
    failing.failing = true;
    const erroring = bucketOver(failing);
    const slow: Decision[] = [];
    const down: Decision[] = [];
    for (let i = 0; i < 4; i++) {
      slow.push(await late.limit('b'));
      expect(slow[i], `call ${i} to the late store`).toMatchObject({ allowed: false, degraded: true });
      down.push(await erroring.limit('b'));
    }
    // The connection error: the share (capacity 8 ÷ 4 instances) admits 2. The timeout: refused, every one.
    expect(down.map((d) => d.allowed)).toEqual([true, true, false, false]);
    expect(slow.map((d) => d.allowed)).toEqual([false, false, false, false]);
    for (const d of slow) expect(d).toMatchObject({ degraded: true, error: { code: 'STORE_TIMEOUT' } });

    // A fixed window: timeouts in the window before do not open the next one to the share either.
    const windowed = createLimiter({
      store: tier(new LateStore(), 'deny-cache', clock.read, options),
      rules: fixedWindow({ limit: 40, window: '1m' }),
      clock: clock.read,
    });
    expect(await windowed.limit('w')).toMatchObject({ allowed: false, degraded: true });
    clock.now += 60_000;
    const next: Decision[] = [];
    for (let i = 0; i < 3; i++) next.push(await windowed.limit('w'));
    expect(next.map((d) => d.allowed)).toEqual([false, false, false]);
    for (const d of next) expect(d).toMatchObject({ degraded: true, error: { code: 'STORE_TIMEOUT' } });
  });
});
