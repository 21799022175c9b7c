/**
 * The worked examples of the article 'Designing a rate limiter', replayed with a fake clock. Minute 0 starts at CLOCK_START,
 * an exact multiple of a minute, so 1:00 is a window boundary.
 */
import { describe, expect, test } from 'vitest';
import { fixedWindow, slidingWindowCounter, slidingWindowLog, tokenBucket } from '../src/index.js';
import { CLOCK_START, harness } from './support/scenario.js';

/** 'm:ss' → epoch ms. */
const at = (clock: string) => {
  const [m, s] = clock.split(':').map(Number) as [number, number];
  return CLOCK_START + (m * 60 + s) * 1000;
};

describe('worked examples of the article "Designing a rate limiter"', () => {
  test('sliding window log, 2 per minute: 0:01 and 0:15 allowed, 0:55 denied, 1:27 allowed', () => {
    const h = harness(slidingWindowLog({ limit: 2, window: '1m' }));
    const request = (clock: string) => {
      h.now = at(clock);
      return h.limiter.limitSync('user');
    };
    expect(request('0:01')).toMatchObject({ allowed: true, remaining: 1 });
    expect(request('0:15')).toMatchObject({ allowed: true, remaining: 0 });
    // 0:01 leaves the window at 1:01, which frees the one unit needed.
    expect(request('0:55')).toMatchObject({ allowed: false, reason: 'rate_limited', retryAfter: 6_000, resetAt: at('1:15') });
    // The window (0:27, 1:27] holds no admitted request before this one. The article also logs its denied 0:55
    // request and so ends with a full log; sluice does not log denials (documented), so one unit is left.
    expect(request('1:27')).toMatchObject({ allowed: true, remaining: 1 });
  });

  test('sliding window counter, 7 per minute: previous 5, current 3, at 1:18 the estimate 3 + 5 × 0.7 = 6.5 rounds down to 6, so allowed', () => {
    const h = harness(slidingWindowCounter({ limit: 7, window: '1m' }));
    for (const clock of ['0:10', '0:20', '0:30', '0:40', '0:50']) {
      h.now = at(clock);
      expect(h.limiter.limitSync('user').allowed).toBe(true);
    }
    for (const clock of ['1:02', '1:05', '1:10']) {
      h.now = at(clock);
      expect(h.limiter.limitSync('user').allowed).toBe(true);
    }
    h.now = at('1:18');
    // Rounded up (7), the request would be denied: this pins the article's "round down".
    expect(h.limiter.peekSync('user')).toMatchObject({ allowed: true, remaining: 1 });
    expect(h.limiter.limitSync('user')).toMatchObject({ allowed: true, remaining: 0 });
    expect(h.limiter.limitSync('user')).toMatchObject({ allowed: false, reason: 'rate_limited' });
  });

  test('token bucket of 3 refilled with 3 at each minute: 0:01, 0:15 ×2 allowed, 0:58 denied, 1:00 refilled', () => {
    const h = harness(tokenBucket({ capacity: 3, refillRate: 3, interval: '1m', refill: 'interval' }));
    const request = (clock: string) => {
      h.now = at(clock);
      return h.limiter.limitSync('user');
    };
    expect(request('0:01')).toMatchObject({ allowed: true, remaining: 2 });
    expect(request('0:15')).toMatchObject({ allowed: true, remaining: 1 });
    expect(request('0:15')).toMatchObject({ allowed: true, remaining: 0, resetAt: at('1:00') });
    expect(request('0:58')).toMatchObject({ allowed: false, reason: 'rate_limited', retryAfter: 2_000, remaining: 0 });
    expect(request('0:59')).toMatchObject({ allowed: false, retryAfter: 1_000 });
    h.now = at('1:00');
    expect(h.limiter.peekSync('user')).toMatchObject({ allowed: true, remaining: 3, resetAt: at('1:00') });
    expect(request('1:00')).toMatchObject({ allowed: true, remaining: 2 });
  });

  test('fixed window, 5 per minute: the sixth request in a minute is denied, yet 10 pass across a boundary', () => {
    const h = harness(fixedWindow({ limit: 5, window: '1m' }));
    h.now = at('0:10');
    for (let i = 0; i < 5; i++) expect(h.limiter.limitSync('a').allowed).toBe(true);
    expect(h.limiter.limitSync('a')).toMatchObject({ allowed: false, retryAfter: 50_000, resetAt: at('1:00') });
    // The documented worst case: a flurry at the end of one minute and another at the start of the next.
    let admitted = 0;
    h.now = at('1:59');
    for (let i = 0; i < 5; i++) admitted += h.limiter.limitSync('b').allowed ? 1 : 0;
    h.now = at('2:00');
    for (let i = 0; i < 5; i++) admitted += h.limiter.limitSync('b').allowed ? 1 : 0;
    expect(admitted).toBe(10);
  });
});
