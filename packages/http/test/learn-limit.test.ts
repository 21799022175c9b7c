/**
 * Following a third party's limit (learn-limit.ts): what each header form states, how a stated limit and a bare
 * 429 move the rules (never above the written limit, ids kept), and the throttled fetch wired to it.
 */
import { afterEach, beforeEach, describe, expect, test, vi } from 'vitest';
import { createLimiter, fixedWindow, gcra, tokenBucket, type Rule } from '@sluice/core';
import { CUT_FACTOR, LimitLearner, QUIET_WINDOWS, statedLimits, withLimit } from '../src/fetch/learn-limit.js';
import { createThrottledFetch } from '../src/fetch/throttled-fetch.js';
import { reserveStore } from './support.js';

const answer = (status: number, headers: Record<string, string> = {}) => ({ status, headers: new Headers(headers) });

describe('statedLimits', () => {
  test.each([
    [
      'ratelimit-policy draft 7',
      { 'RateLimit-Policy': '10;w=1, 1000;w=86400' },
      [
        { limit: 10, windowMs: 1000 },
        { limit: 1000, windowMs: 86_400_000 },
      ],
    ],
    [
      'ratelimit-policy structured',
      { 'RateLimit-Policy': '"burst";q=10;w=1, "daily";q=500;w=86400' },
      [
        { limit: 10, windowMs: 1000 },
        { limit: 500, windowMs: 86_400_000 },
      ],
    ],
    ['ratelimit dictionary', { RateLimit: 'limit=10, remaining=3, reset=5' }, [{ limit: 10 }]],
    ['ratelimit-limit', { 'RateLimit-Limit': '12' }, [{ limit: 12 }]],
    ['x-ratelimit-limit', { 'X-RateLimit-Limit': '60' }, [{ limit: 60 }]],
    [
      'x-ratelimit-limit with a policy',
      { 'X-RateLimit-Limit': '10, 10;w=1, 100;w=60' },
      [
        { limit: 10, windowMs: 1000 },
        { limit: 100, windowMs: 60_000 },
      ],
    ],
  ])('%s', (_name, headers, expected) => {
    expect(statedLimits(answer(200, headers))).toEqual(expected);
  });

  test.each([
    ['nothing', {}],
    ['zero', { 'X-RateLimit-Limit': '0' }],
    ['negative', { 'X-RateLimit-Limit': '-5' }],
    ['text', { 'X-RateLimit-Limit': 'lots' }],
    ['a quota that is not whole', { 'RateLimit-Policy': '"x";q=1.5;w=1' }],
    ['beyond 2^53', { 'X-RateLimit-Limit': '99999999999999999999' }],
    ['a 10 kB header of commas', { 'RateLimit-Policy': ','.repeat(10_000) }],
  ])('states nothing: %s', (_name, headers) => {
    expect(statedLimits(answer(200, headers))).toEqual([]);
  });
});

describe('LimitLearner', () => {
  const perSecond = gcra({ id: 'api', limit: 20, period: '1s', burst: 4 });
  const daily = fixedWindow({ id: 'day', limit: 1000, window: '1d' });
  function learner(rules: Rule[]) {
    const applied: Array<readonly Rule[]> = [];
    return { learn: new LimitLearner(rules, (r) => applied.push(r)), applied };
  }

  test('a stated limit sets the rule of its window, keeps the id, caps the burst, and never goes above the written limit', () => {
    const { learn, applied } = learner([perSecond, daily]);
    learn.observe(answer(200, { 'RateLimit-Policy': '10;w=1, 400;w=86400' }), 0, 10);
    expect(learn.limits).toEqual([10, 400]);
    const [second, day] = applied.at(-1)!;
    expect(second).toEqual(gcra({ id: 'api', limit: 10, period: '1s', burst: 4 }));
    expect(day).toMatchObject({ id: 'day', limit: 400 });
    learn.observe(answer(200, { 'RateLimit-Policy': '50;w=1' }), 20, 30);
    expect(learn.limits).toEqual([20, 400]); // up again, but only to the 20 written
    expect(applied.at(-1)![0]).toBe(perSecond); // the written rule itself once back at its limit
  });

  test('a stated limit without a window moves the shortest rule only; the same statement applies nothing twice', () => {
    const { learn, applied } = learner([daily, perSecond]);
    learn.observe(answer(200, { 'X-RateLimit-Limit': '8' }), 0, 1);
    learn.observe(answer(200, { 'X-RateLimit-Limit': '8' }), 2, 3);
    expect(learn.limits).toEqual([1000, 8]);
    expect(applied).toHaveLength(1);
  });

  test('a bare 429 cuts by a quarter once per window, ignores answers to requests sent before the cut, and climbs back after quiet windows', () => {
    const { learn } = learner([perSecond]);
    learn.observe(answer(429, { 'Retry-After': '1' }), 0, 5);
    expect(learn.limits).toEqual([Math.floor(20 * CUT_FACTOR)]);
    learn.observe(answer(429), 1, 900); // sent before the cut
    learn.observe(answer(429), 600, 950); // within the window of the cut
    expect(learn.limits).toEqual([15]);
    learn.observe(answer(429), 1000, 1010);
    expect(learn.limits).toEqual([11]);
    learn.observe(answer(200), 1100, 1010 + QUIET_WINDOWS * 1000 - 1);
    expect(learn.limits).toEqual([11]);
    learn.observe(answer(200), 1100, 1010 + QUIET_WINDOWS * 1000);
    expect(learn.limits).toEqual([13]);
    learn.observe(answer(200), 1100, 1010 + QUIET_WINDOWS * 1000 + 500); // one raise per window
    expect(learn.limits).toEqual([13]);
    for (let w = 1; w <= 10; w++) learn.observe(answer(200), 0, 1010 + (QUIET_WINDOWS + w) * 1000);
    expect(learn.limits).toEqual([20]);
  });

  test('cuts stop at 1; token buckets are left as written', () => {
    const bucket = tokenBucket({ capacity: 5, refillRate: 5 });
    const { learn } = learner([gcra({ limit: 2, period: '1s' }), bucket]);
    for (let i = 0; i < 10; i++) learn.observe(answer(503), i * 1000, i * 1000 + 1);
    expect(learn.limits).toEqual([1, 5]);
  });

  test("withLimit keeps a fixed window's stagger offset", () => {
    const staggered = fixedWindow({ id: 'fw', limit: 10, window: '1m', stagger: true });
    const shifted: Rule = { ...staggered, algorithm: 'fixed-window', params: { limit: 10, windowMs: 60_000, offsetMs: 1234 } };
    expect(withLimit(shifted, 5)).toMatchObject({ id: 'fw', limit: 5, stagger: true, params: { offsetMs: 1234, limit: 5 } });
  });
});

describe('createThrottledFetch follows the stated limit', () => {
  const CLOCK_START = 1_700_000_000_000;
  beforeEach(() => {
    vi.useFakeTimers();
    vi.setSystemTime(CLOCK_START);
  });
  afterEach(() => vi.useRealTimers());

  test('after an answer saying 5 per second, requests go out 200 ms apart instead of 100 after the booked one; learn: false keeps 100', async () => {
    for (const learn of [true, false]) {
      const limiter = createLimiter({
        store: reserveStore(),
        rules: gcra({ id: 'api', limit: 10, period: '1s', burst: 1 }),
        clock: () => Date.now(),
      });
      const sent: number[] = [];
      const fetch = (_input: string, _init?: RequestInit) => {
        sent.push(Date.now() - CLOCK_START);
        return Promise.resolve(new Response('ok', { headers: { 'X-RateLimit-Limit': '5' } }));
      };
      const fetchApi = createThrottledFetch({ limiter, maxWait: '10s', fetch, learn });
      await fetchApi('https://api.example.com/first');
      const rest = [1, 2, 3].map(() => fetchApi('https://api.example.com/next'));
      await vi.advanceTimersByTimeAsync(1000);
      await Promise.all(rest);
      // The slot booked at 10 per second (0 to 100) stays booked; the ones after are 200 ms apart.
      expect(sent).toEqual(learn ? [0, 100, 300, 500] : [0, 100, 200, 300]);
      expect(limiter.rules[0]!.id).toBe('api');
      vi.setSystemTime(CLOCK_START);
    }
  });

  test('learn must be a boolean or { source }', () => {
    const limiter = createLimiter({ store: reserveStore(), rules: gcra({ limit: 10, period: '1s' }) });
    expect(() => createThrottledFetch({ limiter, maxWait: '1s', learn: 'yes' as never })).toThrow(
      /learn must be true, false or \{ source \}/,
    );
  });
});
