import { createLimiter, fixedWindow, tokenBucket } from '@sluice/core';
import { describe, expect, it, vi } from 'vitest';
import { addressLost } from '../src/adapter/index.js';
import { createHandler, matchDenyList, type ErrorEvent, type HandleResult, type LimitedEvent } from '../src/index.js';
import { asyncMemoryStore, brokenStore, fakeClock, memoryLimiter, request, written } from './support.js';

function sync(result: HandleResult | Promise<HandleResult>): HandleResult {
  expect(result).not.toBeInstanceOf(Promise);
  return result as HandleResult;
}

describe('createHandler: N allowed, then 429', () => {
  it('counts per client IP and answers the fourth request with 429, exact headers and a problem body', () => {
    const clock = fakeClock();
    const limiter = memoryLimiter({ name: 'api', rules: fixedWindow({ limit: 3, window: '10s' }), clock: clock.read });
    const handler = createHandler({ limiter });
    for (let i = 2; i >= 0; i--) {
      const result = sync(handler.run(request()));
      expect(result).toMatchObject({ allowed: true, outcome: 'allowed', status: 200, identity: 'ip:203.0.113.7', body: undefined });
      expect(written(result.headers)).toEqual({ 'ratelimit-policy': '"api";q=3;w=10', ratelimit: `"api";r=${i};t=7` });
    }
    clock.now += 1_500; // 5.5 s left in the window: headers round up to 6
    const refused = sync(handler.run(request()));
    expect(refused).toMatchObject({ allowed: false, outcome: 'limited', status: 429 });
    expect(written(refused.headers)).toEqual({
      'ratelimit-policy': '"api";q=3;w=10',
      ratelimit: '"api";r=0;t=6',
      'retry-after': '6',
      'content-type': 'application/problem+json',
    });
    expect(JSON.parse(refused.body!)).toEqual({
      type: 'https://iana.org/assignments/http-problem-types#quota-exceeded',
      title: 'Too Many Requests',
      status: 429,
      detail:
        'You have used up the rate limit of policy "api" (3 units per 10 seconds). Retry after 6 seconds. The RateLimit response header shows what is left.',
      'violated-policies': ['api'],
      retryAfterSeconds: 6,
    });
    // Another client has its own counter; the window's end frees the first.
    expect(sync(handler.run(request('198.51.100.1'))).allowed).toBe(true);
    clock.now += 5_500;
    expect(sync(handler.run(request())).allowed).toBe(true);
  });

  it('reports a token bucket: t is the time to full when allowed, the retry time when refused', () => {
    const clock = fakeClock();
    // 2 tokens, one back every 3 s: full after 6 s.
    const limiter = memoryLimiter({ name: 'tb', rules: tokenBucket({ capacity: 2, refillRate: 1, interval: '3s' }), clock: clock.read });
    const handler = createHandler({ limiter });
    expect(written(sync(handler.run(request())).headers).ratelimit).toBe('"tb";r=1;t=3');
    expect(written(sync(handler.run(request())).headers).ratelimit).toBe('"tb";r=0;t=6');
    clock.now += 1_000;
    const refused = sync(handler.run(request()));
    const headers = written(refused.headers);
    expect(headers.ratelimit).toBe('"tb";r=0;t=2');
    expect(headers['retry-after']).toBe('2');
    expect(headers['ratelimit-policy']).toBe('"tb";q=2;w=6');
  });

  it('names the violated policy in the problem body exactly as its RateLimit item (policy/ruleId for compound limiters)', () => {
    const clock = fakeClock();
    const limiter = memoryLimiter({
      name: 'demo',
      rules: [fixedWindow({ limit: 5, window: '10s', id: 'burst' }), fixedWindow({ limit: 1, window: '1m', id: 'minute' })],
      clock: clock.read,
    });
    const handler = createHandler({ limiter });
    expect(sync(handler.run(request())).allowed).toBe(true);
    const refused = sync(handler.run(request()));
    expect(written(refused.headers)['ratelimit-policy']).toContain('"demo/minute";q=1;w=60');
    expect(JSON.parse(refused.body!)['violated-policies']).toEqual(['demo/minute']);
  });

  it("on a 429 from a compound limiter no t exceeds Retry-After (the day rule's t is capped at it)", () => {
    const clock = fakeClock();
    const burst = fixedWindow({ limit: 4, window: '1m', id: 'burst' });
    const day = fixedWindow({ limit: 1000, window: '1d', id: 'day' });
    const limiter = memoryLimiter({ name: 'api', rules: [burst, day], clock: clock.read });
    const handler = createHandler({ limiter, headers: ['draft-11', 'legacy'], legacyReset: 'delta-seconds' });
    for (let i = 0; i < 4; i++) sync(handler.run(request()));
    const secondsToMidnight = Math.ceil((86_400_000 - (clock.now % 86_400_000)) / 1000);
    const secondsToMinute = Math.ceil((60_000 - (clock.now % 60_000)) / 1000);
    expect(secondsToMidnight).toBeGreaterThan(secondsToMinute);
    const refused = sync(handler.run(request()));
    const headers = written(refused.headers);
    expect(headers['retry-after']).toBe(String(secondsToMinute));
    expect(headers.ratelimit).toBe(`"api/burst";r=0;t=${secondsToMinute}, "api/day";r=996;t=${secondsToMinute}`);
    expect(headers['x-ratelimit-reset']).toBe(String(secondsToMinute));
    // What the README claims, item by item: on a 429 every t is at most Retry-After.
    for (const item of headers.ratelimit!.split(', '))
      expect(Number(/;t=(\d+)/.exec(item)![1])).toBeLessThanOrEqual(Number(headers['retry-after']));
    // An allowed response still reports each rule's own effective window.
    expect(written(sync(handler.run(request('198.51.100.1'))).headers).ratelimit).toBe(
      `"api/burst";r=3;t=${secondsToMinute}, "api/day";r=999;t=${secondsToMidnight}`,
    );
  });

  it('names each rule of a compound limiter, and one item per limiter is appended in order', () => {
    const clock = fakeClock();
    const perSecond = fixedWindow({ limit: 5, window: '1s', id: 'second' });
    const perDay = fixedWindow({ limit: 1000, window: '1d', id: 'day' });
    const a = memoryLimiter({ name: 'api', rules: [perSecond, perDay], clock: clock.read });
    const b = memoryLimiter({ name: 'search', rules: fixedWindow({ limit: 10, window: '1m' }), clock: clock.read });
    const handler = createHandler({ limiter: [a, { limiter: b, name: 'search-v2' }] });
    const result = sync(handler.run(request()));
    expect(result.results.map((r) => r.name)).toEqual(['api', 'search-v2']);
    const headers = written(result.headers);
    const secondsToMidnight = Math.ceil((86_400_000 - (clock.now % 86_400_000)) / 1000);
    expect(headers['ratelimit-policy']).toBe('"api/second";q=5;w=1, "api/day";q=1000;w=86400, "search-v2";q=10;w=60');
    expect(headers.ratelimit).toBe(`"api/second";r=4;t=1, "api/day";r=999;t=${secondsToMidnight}, "search-v2";r=9;t=37`);
  });
});

describe('the synchronous fast path', () => {
  it('answers exactly like the general path, request by request', () => {
    // A hook that returns nothing keeps a configuration off the fast path without changing any answer.
    const sequence = (fastPath: boolean) => {
      const clock = fakeClock();
      const limiter = memoryLimiter({ name: 'api', rules: fixedWindow({ limit: 3, window: '10s' }), clock: clock.read });
      const handler = createHandler({ limiter, headers: ['draft-11', 'legacy'], ...(fastPath ? {} : { identify: () => undefined }) });
      const answers = [];
      for (let i = 0; i < 6; i++) {
        answers.push(sync(handler.run(request(i === 4 ? '198.51.100.1' : '203.0.113.7'))));
        clock.now += 1_700;
      }
      return answers;
    };
    expect(sequence(true)).toEqual(sequence(false));
    expect(sequence(true).map((r) => r.status)).toEqual([200, 200, 200, 429, 200, 200]); // the sixth starts a new window
  });
});

describe('several limiters', () => {
  it('a refusal by a later limiter gives back what the earlier ones took', async () => {
    const clock = fakeClock();
    const wide = memoryLimiter({ name: 'wide', rules: fixedWindow({ limit: 10, window: '10s' }), clock: clock.read });
    const narrow = memoryLimiter({ name: 'narrow', rules: fixedWindow({ limit: 1, window: '10s' }), clock: clock.read });
    const handler = createHandler({ limiter: [wide, narrow] });
    sync(handler.run(request()));
    const refused = sync(handler.run(request()));
    expect(refused.outcome).toBe('limited');
    expect(refused.decision?.rule).toBe('fw:10000');
    expect(written(refused.headers).ratelimit).toBe('"wide";r=9;t=7, "narrow";r=0;t=7');
    expect((await wide.peek('ip:203.0.113.7')).remaining).toBe(9);
  });

  it("a 'shed' limiter guards the server as a whole: one shared bucket, 503 with Retry-After", () => {
    const clock = fakeClock();
    const capacity = memoryLimiter({ name: 'capacity', rules: fixedWindow({ limit: 2, window: '1s' }), clock: clock.read });
    const handler = createHandler({ limiter: { limiter: capacity, kind: 'shed' } });
    sync(handler.run(request('203.0.113.1')));
    sync(handler.run(request('203.0.113.2')));
    const shed = sync(handler.run(request('203.0.113.3')));
    expect(shed).toMatchObject({ allowed: false, outcome: 'shed', status: 503 });
    expect(shed.results[0]!.identity).toBe('server');
    expect(written(shed.headers)['retry-after']).toBe('1');
    expect(JSON.parse(shed.body!).type).toBe('https://iana.org/assignments/http-problem-types#temporary-reduced-capacity');
  });
});

describe('refusals other than 429', () => {
  it('a cost above capacity is 413 without Retry-After (waiting never helps)', () => {
    const limiter = memoryLimiter({ name: 'upload', rules: fixedWindow({ limit: 10, window: '1m' }), clock: fakeClock().read });
    const result = sync(createHandler({ limiter, cost: 11 }).run(request()));
    expect(result).toMatchObject({ allowed: false, outcome: 'cost_exceeds_limit', status: 413 });
    const headers = written(result.headers);
    expect(headers['retry-after']).toBeUndefined();
    expect(headers.ratelimit).toBe('"upload";r=10;t=0');
    expect(JSON.parse(result.body!).detail).toMatch(/costs 11 units, more than policy "upload" allows at once \(10 units per 1 minute\)/);
  });

  it('a store failure under a fail-closed policy is 503 with Retry-After, reported to onError', async () => {
    const onError = vi.fn<(error: unknown, event: ErrorEvent<unknown>) => void>();
    const limiter = createLimiter({
      store: brokenStore(),
      name: 'api',
      rules: fixedWindow({ limit: 5, window: '1s' }),
      onStoreError: 'deny',
    });
    const result = await createHandler({ limiter, onError }).handle(request());
    expect(result).toMatchObject({ allowed: false, outcome: 'store_unavailable', status: 503, degraded: true });
    // No counts stand behind a policy answer, so no RateLimit fields invent any; Retry-After still says when to retry.
    expect(written(result.headers)).toEqual({ 'retry-after': '1', 'content-type': 'application/problem+json' });
    expect(onError).toHaveBeenCalledOnce();
    expect(onError.mock.calls[0]![0]).toMatchObject({ code: 'STORE_ERROR' });
    expect(onError.mock.calls[0]![1]).toMatchObject({ source: 'store', limiterName: 'api' });
  });

  it('a store failure under fail-open lets the request through but never as an ordinary allow', async () => {
    const onError = vi.fn();
    const limiter = createLimiter({ store: brokenStore(), name: 'api', rules: fixedWindow({ limit: 5, window: '1s' }) });
    const result = await createHandler({ limiter, onError }).handle(request());
    expect(result).toMatchObject({ allowed: true, degraded: true });
    expect(result.decision?.reason).toBe('store_unavailable');
    // The fail-open answer has no real counts behind it, so it sends no RateLimit fields that would invent some.
    expect(written(result.headers)).toEqual({});
    expect(onError).toHaveBeenCalledOnce();
  });

  it('without onError, a failing store warns on the console, at most once a minute', async () => {
    const warn = vi.spyOn(console, 'warn').mockImplementation(() => undefined);
    try {
      const limiter = createLimiter({
        store: brokenStore(),
        name: 'api',
        rules: fixedWindow({ limit: 5, window: '1s' }),
        circuitBreaker: false,
      });
      const handler = createHandler({ limiter });
      await handler.handle(request());
      await handler.handle(request());
      expect(warn).toHaveBeenCalledOnce();
      expect(warn.mock.calls[0]![0]).toBe(
        '[sluice] store failure in limiter "api": the store failed: connection refused. Pass onError to handle it.',
      );
    } finally {
      warn.mockRestore();
    }
  });
});

describe('identity', () => {
  it('prefers the authenticated id, falling back to the IP for anonymous requests', () => {
    const limiter = memoryLimiter({ name: 'api', rules: fixedWindow({ limit: 1, window: '1m' }), clock: fakeClock().read });
    const handler = createHandler<{ user?: { id: number } }>({ limiter, identify: (req) => req.user?.id });
    expect(sync(handler.run(request(), { user: { id: 42 } })).identity).toBe('user:42');
    expect(sync(handler.run(request(), { user: { id: 42 } })).outcome).toBe('limited');
    // Same IP, different user; and the IP's own bucket is separate from both.
    expect(sync(handler.run(request(), { user: { id: 7 } })).allowed).toBe(true);
    expect(sync(handler.run(request(), {})).identity).toBe('ip:203.0.113.7');
  });

  it("no identity at all: 'refuse' (the default) is a 400 that says why, before anything is counted", () => {
    const limiter = memoryLimiter({ name: 'api', rules: fixedWindow({ limit: 1, window: '1m' }), clock: fakeClock().read });
    const result = sync(createHandler({ limiter }).run(request(null)));
    expect(result).toMatchObject({ allowed: false, outcome: 'unidentified', status: 400, results: [] });
    expect(JSON.parse(result.body!).detail).toMatch(
      /could not tell who sent this request: there is no authenticated id and the runtime exposes no client address/,
    );
    expect(written(result.headers)).toEqual({ 'content-type': 'application/problem+json' });
  });

  it("'skip' lets it through unlimited; a named bucket counts every such request together", () => {
    const limiter = memoryLimiter({ name: 'api', rules: fixedWindow({ limit: 1, window: '1m' }), clock: fakeClock().read });
    expect(sync(createHandler({ limiter, clientIp: false, onMissingIdentity: 'skip' }).run(request())).outcome).toBe('skipped');
    const bucketed = createHandler({ limiter, clientIp: false, onMissingIdentity: { bucket: 'anonymous' } });
    expect(sync(bucketed.run(request('1.1.1.1'))).identity).toBe('bucket:anonymous');
    expect(sync(bucketed.run(request('2.2.2.2'))).outcome).toBe('limited');
  });

  it('takes a client IP function (e.g. Express req.ip) and still parses what it returns', async () => {
    const limiter = memoryLimiter({ name: 'api', rules: fixedWindow({ limit: 1, window: '1m' }), clock: fakeClock().read });
    const handler = createHandler<{ ip: string }>({ limiter, clientIp: async (req) => req.ip });
    expect((await handler.handle(request(), { ip: '::ffff:198.51.100.4' })).identity).toBe('ip:198.51.100.4');
    expect((await handler.handle(request(), { ip: 'garbage' })).outcome).toBe('unidentified');
  });

  it('rejects an identify hook that returns something that is not an id', async () => {
    const limiter = memoryLimiter({ name: 'api', rules: fixedWindow({ limit: 1, window: '1m' }) });
    const handler = createHandler({ limiter, identify: () => ({ id: 1 }) as unknown as string });
    await expect(handler.handle(request())).rejects.toMatchObject({ code: 'INVALID_IDENTITY' });
  });
});

describe('shadow mode, shadow-ban, skip, cost', () => {
  it('shadow mode counts and sends headers but never refuses; onLimited hears the would-be refusals', () => {
    const events: LimitedEvent<unknown>[] = [];
    const limiter = memoryLimiter({ name: 'api', rules: fixedWindow({ limit: 1, window: '10s' }), clock: fakeClock().read });
    const handler = createHandler({ limiter, shadow: true, onLimited: (e) => events.push(e) });
    expect(sync(handler.run(request())).outcome).toBe('allowed');
    const second = sync(handler.run(request()));
    expect(second).toMatchObject({ allowed: true, outcome: 'shadow', status: 200 });
    expect(written(second.headers)).toEqual({ 'ratelimit-policy': '"api";q=1;w=10', ratelimit: '"api";r=0;t=7' });
    expect(events).toHaveLength(1);
    expect(events[0]).toMatchObject({ shadow: true, shadowBanned: false, identity: 'ip:203.0.113.7', limiterName: 'api' });
  });

  it("a limiter in core's shadow mode is reported the same way", () => {
    const limiter = memoryLimiter({
      name: 'api',
      rules: fixedWindow({ limit: 1, window: '10s' }),
      clock: fakeClock().read,
      mode: 'shadow',
    });
    const handler = createHandler({ limiter });
    sync(handler.run(request()));
    expect(sync(handler.run(request()))).toMatchObject({ allowed: true, outcome: 'shadow' });
  });

  it('shadow-ban answers 200 with the configured body, only when `when` says so', () => {
    const events: LimitedEvent<{ flagged: boolean }>[] = [];
    const limiter = memoryLimiter({ name: 'api', rules: fixedWindow({ limit: 1, window: '10s' }), clock: fakeClock().read });
    const handler = createHandler<{ flagged: boolean }>({
      limiter,
      shadowBan: { when: (req) => req.flagged, body: '{"items":[]}' },
      onLimited: (e) => events.push(e),
    });
    sync(handler.run(request(), { flagged: true }));
    const banned = sync(handler.run(request(), { flagged: true }));
    expect(banned).toMatchObject({ allowed: false, outcome: 'shadow_banned', status: 200, body: '{"items":[]}' });
    expect(written(banned.headers)).toEqual({
      'ratelimit-policy': '"api";q=1;w=10',
      ratelimit: '"api";r=0;t=7',
      'content-type': 'application/json; charset=utf-8',
    });
    expect(events[0]).toMatchObject({ shadowBanned: true, shadow: false });
    expect(sync(handler.run(request(), { flagged: false })).status).toBe(429);
  });

  it('a shadow-banned response carries the same header names as an allowed one, in every header style', () => {
    for (const headers of [undefined, 'draft-7', 'draft-6', 'legacy', ['draft-11', 'legacy']] as const) {
      const limiter = memoryLimiter({
        name: 'api',
        rules: [fixedWindow({ limit: 1, window: '10s', id: 's' }), fixedWindow({ limit: 50, window: '1d', id: 'd' })],
        clock: fakeClock().read,
      });
      const handler = createHandler({ limiter, shadowBan: true, ...(headers === undefined ? {} : { headers }) });
      const allowed = sync(handler.run(request()));
      const banned = sync(handler.run(request()));
      expect(banned.outcome).toBe('shadow_banned');
      // The route's response brings its own Content-Type; sluice adds the rest, the same names either way.
      const names = (result: HandleResult) =>
        Object.keys(written(result.headers))
          .filter((name) => name !== 'content-type')
          .sort();
      expect(names(banned), String(headers)).toEqual(names(allowed));
      expect(names(banned).length).toBeGreaterThan(0);
    }
  });

  it('skipped requests are not counted and get no headers', () => {
    const limiter = memoryLimiter({ name: 'api', rules: fixedWindow({ limit: 1, window: '10s' }), clock: fakeClock().read });
    const handler = createHandler<{ path: string }>({ limiter, skip: (req) => req.path === '/health' });
    for (let i = 0; i < 3; i++)
      expect(sync(handler.run(request(), { path: '/health' }))).toMatchObject({ outcome: 'skipped', headers: [] });
    expect(sync(handler.run(request(), { path: '/' })).allowed).toBe(true);
  });

  it('takes a cost per request, from a function when it depends on the request', () => {
    const limiter = memoryLimiter({ name: 'api', rules: fixedWindow({ limit: 10, window: '10s' }), clock: fakeClock().read });
    const handler = createHandler<{ size: number }>({ limiter, cost: (req) => req.size });
    expect(written(sync(handler.run(request(), { size: 4 })).headers).ratelimit).toBe('"api";r=6;t=7');
    expect(sync(handler.run(request(), { size: 7 })).outcome).toBe('limited');
    expect(sync(handler.run(request(), { size: 6 })).allowed).toBe(true);
  });

  it('refusalResponse can replace the refusal response', () => {
    const limiter = memoryLimiter({ name: 'api', rules: fixedWindow({ limit: 1, window: '10s' }), clock: fakeClock().read });
    const handler = createHandler({
      limiter,
      refusalResponse: (ctx) => ({
        body: `slow down, ${ctx.retryAfterSeconds}s`,
        contentType: 'text/plain',
        headers: { 'X-Reason': ctx.kind },
      }),
    });
    sync(handler.run(request()));
    const refused = sync(handler.run(request()));
    expect(refused.body).toBe('slow down, 7s');
    expect(written(refused.headers)).toMatchObject({ 'content-type': 'text/plain', 'x-reason': 'limited', 'retry-after': '7' });
  });
});

describe('asynchronous stores and hooks', () => {
  it('answers through a promise only when something needed one', async () => {
    const limiter = createLimiter({
      store: asyncMemoryStore(),
      name: 'api',
      rules: fixedWindow({ limit: 1, window: '10s' }),
      clock: fakeClock().read,
    });
    const handler = createHandler({ limiter });
    const first = handler.run(request(), undefined);
    expect(first).toBeInstanceOf(Promise);
    expect((await first).allowed).toBe(true);
    expect((await handler.handle(request())).status).toBe(429);
  });

  it('hook rejections reject the handler, for the framework to handle', async () => {
    const limiter = memoryLimiter({ name: 'api', rules: fixedWindow({ limit: 1, window: '10s' }) });
    const handler = createHandler({ limiter, identify: () => Promise.reject(new Error('session store down')) });
    await expect(handler.handle(request())).rejects.toThrow('session store down');
  });

  it('an onLimited hook that throws is reported to onError and does not break the response', () => {
    const errors: unknown[] = [];
    const limiter = memoryLimiter({ name: 'api', rules: fixedWindow({ limit: 1, window: '10s' }), clock: fakeClock().read });
    const handler = createHandler({
      limiter,
      onLimited: () => {
        throw new Error('metrics down');
      },
      onError: (error, event) => errors.push([String(error), event.source]),
    });
    sync(handler.run(request()));
    expect(sync(handler.run(request())).status).toBe(429);
    expect(errors).toEqual([['Error: metrics down', 'hook']]);
  });

  it('an async onLimited or onDenied hook that rejects is reported to onError, not left unhandled, and does not delay the response', async () => {
    const errors: unknown[] = [];
    const limiter = memoryLimiter({ name: 'api', rules: fixedWindow({ limit: 1, window: '10s' }), clock: fakeClock().read });
    limiter.configure({ deny: [{ match: '198.51.100.1' }] });
    const handler = createHandler({
      limiter,
      denyList: matchDenyList,
      onLimited: async () => Promise.reject(new Error('metrics down')),
      onDenied: async () => Promise.reject(new Error('audit log down')),
      onError: (error, event) => errors.push([String(error), event.source]),
    });
    sync(handler.run(request()));
    expect(sync(handler.run(request())).status).toBe(429);
    expect(sync(handler.run(request('198.51.100.1'))).status).toBe(403);
    expect(errors).toEqual([]);
    await new Promise((resolve) => setTimeout(resolve, 0));
    expect(errors).toEqual([
      ['Error: metrics down', 'hook'],
      ['Error: audit log down', 'hook'],
    ]);
  });
});

describe('a request whose connection was reset before its address could be read', () => {
  const lost = { headers: {}, remoteAddress: undefined, connectionLost: true, method: 'GET', url: '/' };

  it("is refused under 'skip' and { bucket } too, and counted nowhere", async () => {
    for (const onMissingIdentity of ['refuse', 'skip', { bucket: 'anonymous' }] as const) {
      const limiter = memoryLimiter({ name: 'api', rules: fixedWindow({ limit: 1, window: '10s' }), clock: fakeClock().read });
      const handler = createHandler({ limiter, onMissingIdentity });
      const result = sync(handler.run(lost));
      expect(result, JSON.stringify(onMissingIdentity)).toMatchObject({ allowed: false, outcome: 'unidentified', status: 400 });
      expect(JSON.parse(result.body!).detail).toContain('the connection was reset before its address could be read');
      // Through the general path (an async hook) as well.
      const general = await createHandler({ limiter, onMissingIdentity, identify: () => Promise.resolve(undefined) }).handle(lost);
      expect(general.outcome).toBe('unidentified');
      expect((await limiter.peek('bucket:anonymous')).remaining).toBe(1);
    }
  });

  it('addressLost tells a lost peer address from a transport that has none', () => {
    expect(addressLost({ remoteAddress: undefined, localPort: 8080 })).toBe(true); // TCP, peer already reset
    expect(addressLost({ remoteAddress: undefined, destroyed: true })).toBe(true);
    expect(addressLost({ remoteAddress: undefined })).toBe(false); // a Unix socket: no peer address to lose
    expect(addressLost({ remoteAddress: '203.0.113.7', destroyed: true, localPort: 8080 })).toBe(false);
    expect(addressLost(undefined)).toBe(false);
  });

  it('is decided as usual when identify names the client, or when IP fallback is off', () => {
    const limiter = memoryLimiter({ name: 'api', rules: fixedWindow({ limit: 1, window: '10s' }), clock: fakeClock().read });
    expect(sync(createHandler({ limiter, identify: () => 'alice' }).run(lost))).toMatchObject({ allowed: true, identity: 'user:alice' });
    expect(sync(createHandler({ limiter, clientIp: false, onMissingIdentity: { bucket: 'anonymous' } }).run(lost))).toMatchObject({
      allowed: true,
      identity: 'bucket:anonymous',
    });
  });
});

describe('options are validated once, with messages that say what to change', () => {
  const limiter = memoryLimiter({ name: 'api', rules: fixedWindow({ limit: 1, window: '10s' }) });
  it.each([
    [{}, /limiter\[0\] must be a limiter from createLimiter\(\)/],
    [{ limiter, cost: -1 }, /cost must be a non-negative integer or a function \(request\) => number, got -1/],
    [
      { limiter, headers: 'draft-9' },
      /headers must be 'draft-11', 'draft-7', 'draft-6', 'legacy', a list of them, or false, got "draft-9"/,
    ],
    [{ limiter, headers: ['draft-11', 'draft-7'] }, /'draft-11' and 'draft-7' both define the RateLimit field differently/],
    [{ limiter, onMissingIdentity: 'allow' }, /onMissingIdentity must be 'refuse', 'skip' or \{ bucket: 'name' \}/],
    [{ limiter, onMissingIdentity: { bucket: '' } }, /onMissingIdentity must be/],
    [{ limiter, onMissingIdentity: 'deny' }, /onMissingIdentity must be 'refuse', 'skip' or \{ bucket: 'name' \} .*, got "deny"/],
    [{ limiter, denyResponse: () => undefined }, /unknown option "denyResponse"/],
    [{ limiter: { limiter, policy: 'api' } }, /unknown option "policy"/],
    [{ limiter, shadowBan: { status: 99 } }, /shadowBan.status must be an HTTP status from 200 to 599, got 99/],
    [{ limiter, identify: 'user' }, /identify must be a function \(request\) => id \| undefined, got "user"/],
    [{ limiter, limit: 5 }, /unknown option "limit"; accepted options are limiter, identify/],
    [{ limiter: { limiter, kind: 'global' } }, /limiter\[0\].kind must be 'limit' or 'shed', got "global"/],
    [{ limiter: { limiter, name: 'ä' } }, /limiter\[0\].name must be 1 to 64 printable ASCII characters/],
    [{ limiter, clientIp: { trustProxy: 'everyone' } }, /clientIp.trustProxy: "everyone" is not an address or CIDR block/],
  ])('%#', (options, message) => {
    expect(() => createHandler(options as never)).toThrow(message);
  });

  it('a limiter passed where the options go is named as such, not as unknown option "name"', () => {
    expect(() => createHandler(limiter as never)).toThrow(
      '[sluice] rate limit options: got a limiter where the options object goes; pass { limiter } instead, e.g. rateLimit({ limiter })',
    );
    expect(() => createHandler(limiter as never)).not.toThrow(/unknown option/);
  });
});
