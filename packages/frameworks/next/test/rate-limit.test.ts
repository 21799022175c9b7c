import { fixedWindow, tokenBucket, createLimiter } from '@sluice/core';
import { NextResponse } from 'next/server';
import { describe, expect, it } from 'vitest';
import { rateLimit, toNextResponse, withRateLimitHeaders } from '../src/index.js';
import { brokenStore, fakeClock, fetchEvent, memoryLimiter, nextRequest } from './support.js';

const VERCEL = { platform: 'vercel' } as const;

describe('shadow-banned responses', () => {
  it('carry the rate-limit header names an allowed response gets (no Retry-After)', async () => {
    const limiter = memoryLimiter({ name: 'api', clock: fakeClock().read, rules: fixedWindow({ limit: 1, window: '10s' }) });
    const limit = rateLimit({ limiter, clientIp: VERCEL, shadowBan: true });
    const from = () => nextRequest({ 'x-vercel-forwarded-for': '203.0.113.7' });
    const allowed = await limit(from(), fetchEvent());
    const banned = await limit(from(), fetchEvent());
    expect([allowed.status, banned.status, await banned.text()]).toEqual([200, 200, '{}']);
    // x-middleware-next tells Next.js to run the route (whose response brings its own Content-Type); the ban is
    // answered here. Everything else sluice writes is the same set of names.
    const names = (response: Response) => {
      const found: string[] = [];
      response.headers.forEach((_value, name) => found.push(name));
      return found.filter((name) => name !== 'x-middleware-next' && name !== 'content-type').sort();
    };
    expect(names(banned)).toEqual(names(allowed));
    expect(names(allowed)).toEqual(['ratelimit', 'ratelimit-policy']);
  });
});

describe('rateLimit() as middleware / proxy', () => {
  it('lets N through with NextResponse.next() carrying RateLimit headers, then answers 429 with exact headers', async () => {
    const clock = fakeClock();
    const limiter = memoryLimiter({ name: 'api', clock: clock.read, rules: fixedWindow({ limit: 2, window: '10s' }) });
    const limit = rateLimit({ limiter, clientIp: VERCEL });
    const from = () => nextRequest({ 'x-vercel-forwarded-for': '203.0.113.7' });

    const first = await limit(from(), fetchEvent());
    expect(first.status).toBe(200);
    // NextResponse.next(): Next.js continues to the route and merges these headers into its response.
    expect(first.headers.get('x-middleware-next')).toBe('1');
    expect(first.headers.get('ratelimit-policy')).toBe('"api";q=2;w=10');
    expect(first.headers.get('ratelimit')).toBe('"api";r=1;t=7');
    expect((await limit(from(), fetchEvent())).headers.get('ratelimit')).toBe('"api";r=0;t=7');

    const refused = await limit(from(), fetchEvent());
    expect(refused).toBeInstanceOf(NextResponse);
    expect(refused.status).toBe(429);
    expect(refused.headers.get('x-middleware-next')).toBeNull();
    expect(refused.headers.get('ratelimit-policy')).toBe('"api";q=2;w=10');
    expect(refused.headers.get('ratelimit')).toBe('"api";r=0;t=7');
    expect(refused.headers.get('retry-after')).toBe('7');
    expect(refused.headers.get('content-type')).toBe('application/problem+json');
    expect(await refused.json()).toMatchObject({
      type: 'https://iana.org/assignments/http-problem-types#quota-exceeded',
      status: 429,
      'violated-policies': ['api'],
      retryAfterSeconds: 7,
    });

    clock.now += 7_000; // the next window
    expect((await limit(from(), fetchEvent())).status).toBe(200);
  });

  it('counts the signed-in user first and the platform address only for anonymous requests', async () => {
    const limiter = memoryLimiter({ name: 'api', clock: fakeClock().read, rules: fixedWindow({ limit: 1, window: '10s' }) });
    const limit = rateLimit({ limiter, identify: (request) => request.headers.get('x-user'), clientIp: VERCEL });
    const seen: (string | undefined)[] = [];
    const variants: Record<string, string>[] = [
      { 'x-user': 'alice' },
      { 'x-user': 'bob' },
      {},
      { 'x-vercel-forwarded-for': '2001:db8:1:2::99' },
    ];
    for (const headers of variants) {
      const result = await limit.check(nextRequest({ 'x-vercel-forwarded-for': '2001:db8:1:2::1', ...headers }));
      seen.push(`${result.identity} ${result.status}`);
    }
    // Two anonymous requests from one IPv6 /56: one bucket.
    expect(seen).toEqual(['user:alice 200', 'user:bob 200', 'ip:2001:db8:1::/56 200', 'ip:2001:db8:1::/56 429']);
  });

  it('behind one reverse proxy (trustProxy: 1) reads the rightmost X-Forwarded-For entry, which the client cannot choose', async () => {
    const limiter = memoryLimiter({ name: 'api', clock: fakeClock().read, rules: fixedWindow({ limit: 1, window: '10s' }) });
    const limit = rateLimit({ limiter, clientIp: { trustProxy: 1 } });
    const forged = await Promise.all(
      ['1.1.1.1', '2.2.2.2', '3.3.3.3'].map((fake) => limit.check(nextRequest({ 'x-forwarded-for': `${fake}, 198.51.100.4` }))),
    );
    expect(forged.map((r) => `${r.identity} ${r.status}`)).toEqual(['ip:198.51.100.4 200', 'ip:198.51.100.4 429', 'ip:198.51.100.4 429']);
  });

  it('refuses with 400 and says why when an anonymous request carries no usable address', async () => {
    const limiter = memoryLimiter({ name: 'api', rules: fixedWindow({ limit: 5, window: '10s' }) });
    const response = await rateLimit({ limiter, clientIp: VERCEL })(nextRequest());
    expect(response.status).toBe(400);
    expect((await response.json()).detail).toContain('the runtime exposes no client address');
  });

  it('answers 503 with Retry-After and reports the store failure when the limiter fails closed', async () => {
    const limiter = createLimiter({
      name: 'api',
      store: brokenStore(),
      onStoreError: 'deny',
      rules: fixedWindow({ limit: 5, window: '10s' }),
    });
    const errors: string[] = [];
    const limit = rateLimit({
      limiter,
      clientIp: VERCEL,
      onError: (error, event) => void errors.push(`${event.source}: ${(error as Error).message}`),
    });
    const response = await limit(nextRequest({ 'x-real-ip': '203.0.113.7' }), fetchEvent());
    expect(response.status).toBe(503);
    expect(response.headers.get('retry-after')).toBe('1');
    expect(response.headers.get('ratelimit')).toBeNull(); // no invented counts
    expect(errors).toHaveLength(1);
    expect(errors[0]).toMatch(/^store: .*connection refused/);
  });

  it('check() composes: the refusal as a NextResponse, or the headers on a response of your own', async () => {
    const clock = fakeClock();
    const api = memoryLimiter({ name: 'api', clock: clock.read, rules: tokenBucket({ capacity: 10, refillRate: 1, interval: '1s' }) });
    const login = memoryLimiter({ name: 'login', clock: clock.read, rules: fixedWindow({ limit: 1, window: '10s' }) });
    const limitApi = rateLimit({ limiter: api, clientIp: VERCEL });
    const limitLogin = rateLimit({ limiter: login, clientIp: VERCEL });
    const request = () => nextRequest({ 'x-vercel-forwarded-for': '203.0.113.7' }, '/api/login');

    const response = NextResponse.rewrite(new URL('https://app.example/login-v2'));
    withRateLimitHeaders(await limitApi.check(request()), response);
    withRateLimitHeaders(await limitLogin.check(request()), response);
    expect(response.headers.get('x-middleware-rewrite')).toBe('https://app.example/login-v2');
    // Two sluice limiters on one request append their items.
    expect(response.headers.get('ratelimit-policy')).toBe('"api";q=10;w=10, "login";q=1;w=10');
    expect(response.headers.get('ratelimit')).toBe('"api";r=9;t=1, "login";r=0;t=7');

    // NextResponse.redirect's headers are mutable; the web Response.redirect's are not (the README says so).
    const redirect = withRateLimitHeaders(await limitApi.check(request()), NextResponse.redirect(new URL('https://app.example/')));
    expect(redirect.headers.get('ratelimit')).toBe('"api";r=8;t=2');
    const third = await limitApi.check(request());
    expect(() => withRateLimitHeaders(third, Response.redirect('https://app.example/'))).toThrow(TypeError);

    const refused = await limitLogin.check(request());
    expect(refused.allowed).toBe(false);
    const answer = toNextResponse(refused);
    expect(answer.status).toBe(429);
    expect(answer.headers.get('retry-after')).toBe('7');
  });

  it('two limiters composed with check(): every t on the 429 is at most its Retry-After, in either order', async () => {
    const clock = fakeClock();
    const burst = fixedWindow({ limit: 10, window: '1m', id: 'burst' });
    const day = fixedWindow({ limit: 1000, window: '1d', id: 'day' });
    const limitApi = rateLimit({ limiter: memoryLimiter({ name: 'api', clock: clock.read, rules: [burst, day] }), clientIp: VERCEL });
    const login = memoryLimiter({ name: 'login', clock: clock.read, rules: fixedWindow({ limit: 1, window: '15m' }) });
    const limitLogin = rateLimit({ limiter: login, clientIp: VERCEL });
    const request = () => nextRequest({ 'x-vercel-forwarded-for': '203.0.113.8' }, '/api/login');
    // The fake clock stands 37 s before a minute, 97 s before a quarter hour and 6397 s before midnight (UTC).
    const toMidnight = Math.ceil((86_400_000 - (clock.now % 86_400_000)) / 1000);

    const allowed = withRateLimitHeaders(await limitApi.check(request()), NextResponse.next());
    withRateLimitHeaders(await limitLogin.check(request()), allowed);
    expect(allowed.headers.get('ratelimit')).toBe(`"api/burst";r=9;t=37, "api/day";r=999;t=${toMidnight}, "login";r=0;t=97`);

    const api = await limitApi.check(request());
    const refused = await limitLogin.check(request());
    expect(refused.allowed).toBe(false);
    // The refusal first, the app-wide limiter's headers added to it.
    const answer = withRateLimitHeaders(api, toNextResponse(refused));
    expect(answer.headers.get('retry-after')).toBe('97');
    expect(answer.headers.get('ratelimit')).toBe('"login";r=0;t=97, "api/burst";r=8;t=37, "api/day";r=998;t=97');
    // The app-wide limiter's headers first, the refusal's added to them, as stacked middlewares do.
    const stacked = withRateLimitHeaders(refused, withRateLimitHeaders(api, new NextResponse(refused.body, { status: refused.status })));
    expect(stacked.headers.get('retry-after')).toBe('97');
    expect(stacked.headers.get('ratelimit')).toBe('"api/burst";r=8;t=37, "api/day";r=998;t=97, "login";r=0;t=97');
  });

  it('a cost above the capacity is 413 without Retry-After: waiting cannot help', async () => {
    const limiter = memoryLimiter({ name: 'upload', rules: fixedWindow({ limit: 5, window: '10s' }) });
    const limit = rateLimit({ limiter, clientIp: VERCEL, cost: (request) => Number(request.headers.get('x-units')) });
    const response = await limit(nextRequest({ 'x-real-ip': '203.0.113.7', 'x-units': '6' }));
    expect(response.status).toBe(413);
    expect(response.headers.get('retry-after')).toBeNull();
  });

  it('skipped requests continue with no headers', async () => {
    const limiter = memoryLimiter({ name: 'api', rules: fixedWindow({ limit: 1, window: '10s' }) });
    const limit = rateLimit({ limiter, clientIp: VERCEL, skip: (request) => request.nextUrl.pathname === '/api/health' });
    const response = await limit(nextRequest({}, '/api/health'));
    expect(response.headers.get('x-middleware-next')).toBe('1');
    expect(response.headers.get('ratelimit')).toBeNull();
  });

  it('hook errors reject the call (Next.js answers 500), they are never an allow', async () => {
    const limiter = memoryLimiter({ name: 'api', rules: fixedWindow({ limit: 1, window: '10s' }) });
    const limit = rateLimit({
      limiter,
      identify: () => {
        throw new Error('session store down');
      },
    });
    await expect(limit(nextRequest())).rejects.toThrow('session store down');
  });
});
