/**
 * createThrottledFetch and pushBack (outbound calls to a third party): a fake fetch (a function answering
 * `new Response(...)`), fake timers with the limiter's clock on the faked Date. Waits before sending; a 429 with
 * Retry-After pushes the next caller's slot back by at least that; each header form is read; bad options name their
 * field.
 */
import { afterEach, beforeEach, describe, expect, test, vi } from 'vitest';
import { createLimiter, gcra, tokenBucket, type Rule } from '@sluice/core';
import { createThrottledFetch, holdOffMs, parseRateLimit, parseRetryAfter, pushBack } from '../src/fetch/throttled-fetch.js';
import { reserveStore } from './support.js';

const CLOCK_START = 1_700_000_000_000;

function setup(rules: Rule | Rule[]) {
  const limiter = createLimiter({ store: reserveStore(), rules, clock: () => Date.now() });
  return limiter;
}

/** A fake third party: records when each request was sent, answers with `answer(n)` (n from 0). */
function fakeApi(answer: (n: number) => Response = () => new Response('ok')) {
  const sent: Array<{ at: number; url: string }> = [];
  const fetch = (input: string | URL | Request, _init?: RequestInit) => {
    const url = typeof input === 'string' ? input : input instanceof URL ? input.href : input.url;
    sent.push({ at: Date.now() - CLOCK_START, url });
    return Promise.resolve(answer(sent.length - 1));
  };
  return { sent, fetch };
}

beforeEach(() => {
  vi.useFakeTimers();
  vi.setSystemTime(CLOCK_START);
});

afterEach(() => {
  vi.useRealTimers();
});

describe('createThrottledFetch', () => {
  test('waits for its slot before each request (one slot apart, per host)', async () => {
    const limiter = setup(gcra({ limit: 10, period: '1s', burst: 1 }));
    const api = fakeApi();
    const fetchApi = createThrottledFetch({ limiter, maxWait: '10s', fetch: api.fetch });
    const calls = [0, 1, 2].map((i) => fetchApi(`https://api.example.com/items/${i}`));
    const other = fetchApi('https://other.example.com/x'); // another host: its own queue
    await vi.advanceTimersByTimeAsync(0);
    expect(api.sent.map((s) => s.at)).toEqual([0, 0]);
    await vi.advanceTimersByTimeAsync(250);
    await Promise.all([...calls, other]);
    expect(api.sent.filter((s) => s.url.includes('api.example.com')).map((s) => s.at)).toEqual([0, 100, 200]);
  });

  test('a 429 with Retry-After pushes the next caller back by at least that, and is not sent again', async () => {
    const limiter = setup(gcra({ limit: 10, period: '1s', burst: 1 }));
    const api = fakeApi((n) =>
      n === 0 ? new Response('slow down', { status: 429, headers: { 'Retry-After': '2' } }) : new Response('ok'),
    );
    const fetchApi = createThrottledFetch({ limiter, maxWait: '10s', fetch: api.fetch });
    const first = await fetchApi('https://api.example.com/a');
    expect(first.status).toBe(429);
    expect(api.sent).toHaveLength(1);
    // Another worker's call (another throttled fetch on the same limiter and store) queues behind the push back.
    const second = createThrottledFetch({ limiter, maxWait: '10s', fetch: api.fetch })('https://api.example.com/b');
    await vi.advanceTimersByTimeAsync(1999);
    expect(api.sent).toHaveLength(1);
    await vi.advanceTimersByTimeAsync(200);
    expect((await second).status).toBe(200);
    expect(api.sent[1]!.at).toBeGreaterThanOrEqual(2000);
    // One slot after the push back, at the rate learnt from the bare 429 (10 cut to 7 per second: 143 ms).
    expect(api.sent[1]!.at).toBeLessThanOrEqual(2000 + Math.ceil(1000 / 7));
  });

  test('retries sends a refused request again behind the push back, cloning its body', async () => {
    const limiter = setup(gcra({ limit: 10, period: '1s', burst: 1 }));
    const bodies: string[] = [];
    const fetch = async (input: Request | string, _init?: RequestInit) => {
      if (typeof input === 'string') throw new Error('retries send a cloned Request');
      bodies.push(await input.text());
      return bodies.length === 1 ? new Response(null, { status: 503, headers: { 'Retry-After': '1' } }) : new Response('ok');
    };
    const fetchApi = createThrottledFetch({ limiter, maxWait: '10s', fetch, retries: 1 });
    const answer = fetchApi('https://api.example.com/a', { method: 'POST', body: 'payload' });
    await vi.advanceTimersByTimeAsync(1200); // the push back's second, then one slot at the learnt 7 per second
    expect((await answer).status).toBe(200);
    expect(bodies).toEqual(['payload', 'payload']);
  });

  test('a slot beyond maxWait rejects with WAIT_TOO_LONG before anything is sent; the signal aborts the wait', async () => {
    const limiter = setup(gcra({ limit: 1, period: '10s', burst: 1 }));
    const api = fakeApi();
    const fetchApi = createThrottledFetch({ limiter, maxWait: '1s', fetch: api.fetch });
    await fetchApi('https://api.example.com/a');
    await expect(fetchApi('https://api.example.com/b')).rejects.toMatchObject({ code: 'WAIT_TOO_LONG' });
    const patient = createThrottledFetch({ limiter, maxWait: '1m', fetch: api.fetch });
    await expect(patient('https://api.example.com/c', { signal: AbortSignal.abort() })).rejects.toMatchObject({ code: 'ABORTED' });
    expect(api.sent).toHaveLength(1);
  });

  test('a bad option names the field', () => {
    const limiter = setup(gcra({ limit: 10, period: '1s' }));
    expect(() => createThrottledFetch({ limiter, maxWait: 'soon' as never })).toThrow(/maxWait/);
    expect(() => createThrottledFetch({ limiter: {} as never, maxWait: '1s' })).toThrow(/limiter must be/);
    expect(() => createThrottledFetch({ limiter, maxWait: '1s', key: 'host' as never })).toThrow(/key must be a function/);
    expect(() => createThrottledFetch({ limiter, maxWait: '1s', fetch: 42 as never })).toThrow(/fetch must be a function/);
    expect(() => createThrottledFetch({ limiter, maxWait: '1s', retries: -1 })).toThrow(/retries must be/);
    expect(() => createThrottledFetch({ limiter, maxWait: '1s', retry: 1 } as never)).toThrow(/unknown option "retry"/);
    expect(() => createThrottledFetch(undefined as never)).toThrow(/options must be an object/);
  });
});

describe('pushBack', () => {
  test('books the smallest capacity until the next slot is past the delay; a second push back by the same delay books nothing', async () => {
    const limiter = setup([
      tokenBucket({ capacity: 5, refillRate: 10, interval: '1s', id: 'second' }),
      tokenBucket({ capacity: 1000, refillRate: 1000, interval: '1h', id: 'hour' }),
    ]);
    expect(await pushBack(limiter, 'api', 1000)).toBe(3); // 5 now, 5 at 500 ms, 5 at 1000 ms
    expect(await pushBack(limiter, 'api', '1s')).toBe(0); // a duration string says the same
    const next = await limiter.reserve('api', { maxWait: '10s' });
    expect(next.startAt! - next.now).toBeGreaterThanOrEqual(1000);
    // The bookings spent the hour's quota too (the doc comment says so).
    expect(next.rules.find((r) => r.id === 'hour')!.remaining).toBe(1000 - 16);
    await expect(pushBack(limiter, 'api', -1)).rejects.toThrow(/pushBack: delay must be a duration from 0 to/);
    await expect(pushBack(limiter, 'api', 'soon' as never)).rejects.toThrow(/a string like '250ms'/);
  });

  test('is bounded to 100 bookings', async () => {
    const limiter = setup(gcra({ limit: 1, period: '1s', burst: 1 }));
    expect(await pushBack(limiter, 'api', 3_600_000)).toBe(100);
  });
});

describe('header forms', () => {
  const response = (status: number, headers: Record<string, string>) => ({ status, headers: new Headers(headers) });
  test('Retry-After in seconds or an HTTP date, on 429 and 503 only', () => {
    expect(parseRetryAfter('5', CLOCK_START)).toBe(5000);
    expect(parseRetryAfter('1.5', CLOCK_START)).toBe(1500);
    expect(parseRetryAfter(new Date(CLOCK_START + 7000).toUTCString(), CLOCK_START)).toBe(7000);
    expect(parseRetryAfter(new Date(CLOCK_START - 7000).toUTCString(), CLOCK_START)).toBe(0);
    expect(parseRetryAfter('soon', CLOCK_START)).toBeUndefined();
    expect(holdOffMs(response(429, { 'retry-after': '3' }), CLOCK_START)).toBe(3000);
    expect(holdOffMs(response(503, { 'retry-after': '3' }), CLOCK_START)).toBe(3000);
    expect(holdOffMs(response(200, { 'retry-after': '3' }), CLOCK_START)).toBeUndefined();
  });

  test('RateLimit: structured items and the older dictionary', () => {
    expect(parseRateLimit('"default";r=0;t=5')).toBe(5000);
    expect(parseRateLimit('"default";r=3;t=5')).toBeUndefined();
    expect(parseRateLimit('"burst";r=0;t=1, "daily";r=0;t=30')).toBe(30_000);
    expect(parseRateLimit('"burst";r=4;t=1, "daily";r=0;t=30')).toBe(30_000);
    expect(parseRateLimit('limit=10, remaining=0, reset=5')).toBe(5000);
    expect(parseRateLimit('limit=10, remaining=2, reset=5')).toBeUndefined();
    expect(parseRateLimit('r=0;t=5')).toBe(5000); // an item without its name
    expect(holdOffMs(response(200, { ratelimit: '"default";r=0;t=2' }), CLOCK_START)).toBe(2000);
  });

  test('X-RateLimit-Remaining: 0 with X-RateLimit-Reset in seconds or epoch seconds; RateLimit-Remaining/Reset too', () => {
    expect(holdOffMs(response(200, { 'x-ratelimit-remaining': '0', 'x-ratelimit-reset': '4' }), CLOCK_START)).toBe(4000);
    expect(
      holdOffMs(response(200, { 'x-ratelimit-remaining': '0', 'x-ratelimit-reset': String(CLOCK_START / 1000 + 9) }), CLOCK_START),
    ).toBe(9000);
    expect(holdOffMs(response(200, { 'x-ratelimit-remaining': '1', 'x-ratelimit-reset': '4' }), CLOCK_START)).toBeUndefined();
    expect(holdOffMs(response(200, { 'ratelimit-remaining': '0', 'ratelimit-reset': '6' }), CLOCK_START)).toBe(6000);
    expect(holdOffMs(response(429, {}), CLOCK_START)).toBeUndefined();
  });
});
