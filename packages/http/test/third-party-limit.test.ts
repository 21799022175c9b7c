/**
 * thirdPartyLimit (the rule for a third party's stated limit) and the throttled fetch sending on its slots: the
 * bookings never put more than the stated requests into any window of the stated length, from the first (GCRA's
 * default burst puts burst + limit into the first one); a stated window matches the rule's; a wake later than
 * LATE_SEND_MS after its slot is not sent on it but booked again; the store clock's bounds. Fake timers, with the
 * limiter's clock on the faked Date.
 */
import { afterEach, beforeEach, describe, expect, test, vi } from 'vitest';
import { createLimiter, gcra, type Rule } from '@sluice/core';
import { followStated } from '../src/fetch/learn-limit.js';
import { StoreClock } from '../src/fetch/store-clock.js';
import { thirdPartyLimit } from '../src/fetch/third-party-limit.js';
import { LATE_SEND_MS, createThrottledFetch } from '../src/fetch/throttled-fetch.js';
import { reserveStore } from './support.js';

const CLOCK_START = 1_700_000_000_000;

beforeEach(() => {
  vi.useFakeTimers();
  vi.setSystemTime(CLOCK_START);
});

afterEach(() => {
  vi.useRealTimers();
});

/** The start of each of `count` bookings made at once (ms from now), as a fleet's queue fills at a cold start. */
async function starts(rule: Rule | Rule[], count: number): Promise<number[]> {
  const limiter = createLimiter({ store: reserveStore(), rules: rule, clock: () => Date.now() });
  const out: number[] = [];
  for (let i = 0; i < count; i++) {
    const decision = await limiter.reserve('api', { maxWait: '1m' });
    out.push(decision.startAt! - CLOCK_START);
  }
  return out;
}

/** The most starts within any window of `windowMs` that ends at a start (the 1000 ms up to it, as a third party counts). */
function mostInWindow(times: readonly number[], windowMs: number): number {
  let most = 0;
  for (let i = 0, from = 0; i < times.length; i++) {
    while (times[from]! <= times[i]! - windowMs) from++;
    most = Math.max(most, i - from + 1);
  }
  return most;
}

describe('thirdPartyLimit', () => {
  test('50 per second: one booking every 22 ms on average from the first, any 51 spanning the second and 100 ms more', async () => {
    expect(thirdPartyLimit({ requests: 50, per: '1s' })).toMatchObject([
      { id: 'third-party', algorithm: 'gcra', params: { limit: 50, periodMs: 1100, burst: 2 } },
      { id: 'third-party:window', algorithm: 'sliding-window-log', params: { limit: 50, windowMs: 1100 } },
    ]);
    const times = await starts(thirdPartyLimit({ requests: 50, per: '1s' }), 500);
    expect(times[0]).toBe(0);
    // Spread out: never more than two at once, and 22 ms apart on average (no whole millisecond lost per booking).
    expect(mostInWindow(times, 1)).toBeLessThanOrEqual(2);
    expect((times[499]! - times[50]!) / 449).toBeCloseTo(22, 1);
    // At most 47 in any second (50 per 1,100 ms, two at once at the start): the stated 50 with room for late sends.
    expect(mostInWindow(times, 1000)).toBe(47);
    // Any 51 consecutive bookings span more than the second by the margin: a send that late still fits.
    let least = Infinity;
    for (let k = 0; k + 50 < times.length; k++) least = Math.min(least, times[k + 50]! - times[k]!);
    expect(least).toBe(1100);
  });

  test('a small limit: 3 per second, never 4 in a second, any 4 spanning it and 100 ms more', async () => {
    const times = await starts(thirdPartyLimit({ requests: 3, per: '1s' }), 60);
    expect(mostInWindow(times, 1000)).toBe(3);
    let least = Infinity;
    for (let k = 0; k + 3 < times.length; k++) least = Math.min(least, times[k + 3]! - times[k]!);
    expect(least).toBe(1100);
  });

  test("GCRA's default burst, as the examples had it, puts burst + limit into the first second", async () => {
    const times = await starts(gcra({ limit: 49, period: '1s' }), 200);
    // 49 at once, then one every 20.4 ms: 97 in the 1000 ms up to the 97th.
    expect(mostInWindow(times, 1000)).toBe(97);
  });

  test('the margin is 100 ms by default, a tenth of per at most, and a bad option names its field', () => {
    expect(thirdPartyLimit({ requests: 10, per: '100ms' })[1]!.params).toMatchObject({ windowMs: 110 });
    expect(thirdPartyLimit({ requests: 10, per: '1m', margin: '1s' })[1]!.params).toMatchObject({ windowMs: 61_000 });
    expect(thirdPartyLimit({ requests: 10, per: '1s', margin: 0, id: 'api' })).toMatchObject([
      { id: 'api', params: { periodMs: 1000 } },
      { id: 'api:window', params: { windowMs: 1000 } },
    ]);
    expect(thirdPartyLimit({ requests: 1, per: '1m' })[0]!.params).toMatchObject({ burst: 1 });
    expect(() => thirdPartyLimit({ requests: 10, per: '1s', margin: '101ms' })).toThrow(/margin must be a duration from 0 to 100 ms/);
    expect(() => thirdPartyLimit({ requests: 0, per: '1s' })).toThrow(/thirdPartyLimit: requests/);
    expect(() => thirdPartyLimit({ requests: 10, per: 'soon' as never })).toThrow(/thirdPartyLimit: per/);
    expect(() => thirdPartyLimit({ requests: 10, per: '1s', burst: 2 } as never)).toThrow(/unknown option "burst"/);
    expect(() => thirdPartyLimit(undefined as never)).toThrow(/thirdPartyLimit/);
  });

  test("a limit stated for the third party's window (w=1) sets the rule, whose period is that window plus the margin", () => {
    const written = [...thirdPartyLimit({ requests: 50, per: '1s' }), ...thirdPartyLimit({ requests: 5000, per: '1h', id: 'hour' })];
    const now = [50, 50, 5000, 5000];
    expect(followStated(written, [{ limit: 25, windowMs: 1000 }], now)).toEqual([25, 25, 5000, 5000]);
    expect(followStated(written, [{ limit: 2000, windowMs: 3_600_000 }], now)).toEqual([50, 50, 2000, 2000]);
    // A window the rules do not have sets nothing; an unstated one sets the shortest (both rules of it).
    expect(followStated(written, [{ limit: 1, windowMs: 2000 }], now)).toEqual(now);
    expect(followStated(written, [{ limit: 20 }], now)).toEqual([20, 20, 5000, 5000]);
  });
});

describe('the throttled fetch on its slots', () => {
  function setup() {
    const limiter = createLimiter({ store: reserveStore(), rules: gcra({ limit: 10, period: '1s', burst: 1 }), clock: () => Date.now() });
    const sent: number[] = [];
    const fetchApi = createThrottledFetch({
      limiter,
      maxWait: '10s',
      learn: false,
      fetch: async (_input: string) => {
        sent.push(Date.now() - CLOCK_START);
        return new Response('ok');
      },
    });
    return { limiter, sent, fetchApi };
  }

  test(`a slot woken for more than ${LATE_SEND_MS} ms late is left empty: the request books again and is sent on its next slot`, async () => {
    const { sent, fetchApi } = setup();
    const first = fetchApi('https://api.example.com/a'); // the slot at 0
    const second = fetchApi('https://api.example.com/b'); // the slot at 100
    await vi.advanceTimersByTimeAsync(0);
    expect(sent).toEqual([0]);
    // The event loop is held 60 ms (the clock moves on, no timer fires): the second's timer fires at 160.
    vi.setSystemTime(CLOCK_START + 60);
    await vi.advanceTimersByTimeAsync(100);
    expect(sent).toEqual([0]);
    // Booked again at the end of the queue (its missed slot at 100 consumed it): 200.
    await vi.advanceTimersByTimeAsync(40);
    await Promise.all([first, second]);
    expect(sent).toEqual([0, 200]);
  });

  test(`a slot woken for at most ${LATE_SEND_MS} ms late is sent`, async () => {
    const { sent, fetchApi } = setup();
    const calls = [fetchApi('https://api.example.com/a'), fetchApi('https://api.example.com/b')];
    await vi.advanceTimersByTimeAsync(0);
    vi.setSystemTime(CLOCK_START + LATE_SEND_MS);
    await vi.advanceTimersByTimeAsync(100);
    await Promise.all(calls);
    expect(sent).toEqual([0, 100 + LATE_SEND_MS]);
  });

  test('a throttled fetch that has sent nothing books its first request alone: the others book once its answer is in', async () => {
    const limiter = createLimiter({ store: reserveStore(), rules: gcra({ limit: 10, period: '1s', burst: 1 }), clock: () => Date.now() });
    const booked: number[] = [];
    const reserve = limiter.reserve.bind(limiter);
    vi.spyOn(limiter, 'reserve').mockImplementation((identity, options) => {
      booked.push(Date.now() - CLOCK_START);
      return reserve(identity, options);
    });
    const fetchApi = createThrottledFetch({
      limiter,
      maxWait: '10s',
      learn: false,
      // The third party answers 50 ms after each request.
      fetch: (_input: string) => new Promise<Response>((resolve) => setTimeout(() => resolve(new Response('ok')), 50)),
    });
    const calls = [0, 1, 2].map((i) => fetchApi(`https://api.example.com/${i}`));
    await vi.advanceTimersByTimeAsync(400);
    await Promise.all(calls);
    expect(booked).toEqual([0, 50, 50]);
    // Once answered, requests book at once.
    const later = fetchApi('https://api.example.com/3');
    await vi.advanceTimersByTimeAsync(0);
    expect(booked).toEqual([0, 50, 50, 400]);
    await vi.advanceTimersByTimeAsync(100);
    await later;
  });

  test('a request that misses eight slots in a row rejects with WAIT_TOO_LONG and sends nothing', async () => {
    const { limiter, sent, fetchApi } = setup();
    // Every booking's reply is read 50 ms after the slot it books: this process can never send on time.
    const reserve = limiter.reserve.bind(limiter);
    await fetchApi('https://api.example.com/a');
    vi.spyOn(limiter, 'reserve').mockImplementation(async (identity, options) => {
      const decision = await reserve(identity, options);
      vi.setSystemTime(decision.startAt! + 50);
      return decision;
    });
    await expect(fetchApi('https://api.example.com/b')).rejects.toMatchObject({ code: 'WAIT_TOO_LONG', message: /8 slots in a row/ });
    expect(sent).toEqual([0]);
  });
});

describe('StoreClock', () => {
  test("bounds the store's lead by the fastest round trip; a stepped clock starts it again", () => {
    const clock = new StoreClock();
    expect(clock.known).toBe(false);
    expect(clock.earliest(1000)).toBeUndefined();
    clock.observe(1_000_050, 1_000_000, 1_000_080); // lead between -30 and 50
    clock.observe(1_000_205, 1_000_200, 1_000_210); // lead between -5 and 5
    expect(clock.earliest(2_000_000)).toBe(2_000_000 - 5);
    expect(clock.latest(2_000_000)).toBe(2_000_000 + 5);
    clock.observe(2_000_000, 1_999_990, 1_999_980); // read before asked: a clock stepped back during the call
    expect(clock.earliest(2_000_000)).toBe(2_000_000 - 5);
    clock.observe(1_060_400, 1_000_400, 1_000_401); // lead about 60 s: the local clock was stepped back
    expect(clock.earliest(2_000_000)).toBe(2_000_000 - 60_000);
    expect(clock.latest(2_000_000)).toBe(2_000_000 - 59_999);
  });
});
