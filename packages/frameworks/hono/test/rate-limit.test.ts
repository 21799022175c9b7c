// The middleware through `app.request()`: no server, so these also run under the edge-runtime environment, the
// way a Cloudflare Worker runs them (no socket; the address comes from CF-Connecting-IP).
import { createLimiter, fixedWindow } from '@sluice/core';
import { Hono } from 'hono';
import { describe, expect, it, vi } from 'vitest';
import { rateLimit, type HandleResult } from '../src/index.js';
import { brokenStore, deferred, executionContext, fakeClock, memoryLimiter } from './support.js';

const CLOUDFLARE = { platform: 'cloudflare' } as const;
const FROM = { 'cf-connecting-ip': '203.0.113.7' };

function window10s(name = 'api', limit = 3) {
  const clock = fakeClock();
  return memoryLimiter({ name, rules: fixedWindow({ limit, window: '10s' }), clock: clock.read });
}

describe('rateLimit', () => {
  it('lets N requests through with RateLimit headers and c.get(rateLimit), then answers 429 problem+json', async () => {
    const app = new Hono();
    app.use(rateLimit({ limiter: window10s(), clientIp: CLOUDFLARE }));
    app.get('/', (c) => {
      const info = c.get('rateLimit');
      return c.json({ identity: info.identity, outcome: info.outcome, remaining: info.decision?.remaining });
    });
    for (const left of [2, 1, 0]) {
      const reply = await app.request('/', { headers: FROM });
      expect(reply.status).toBe(200);
      expect(reply.headers.get('ratelimit')).toBe(`"api";r=${left};t=7`);
      expect(reply.headers.get('ratelimit-policy')).toBe('"api";q=3;w=10');
      expect(await reply.json()).toEqual({ identity: 'ip:203.0.113.7', outcome: 'allowed', remaining: left });
    }
    const refused = await app.request('/', { headers: FROM });
    expect(refused.status).toBe(429);
    expect(refused.headers.get('retry-after')).toBe('7');
    expect(refused.headers.get('ratelimit')).toBe('"api";r=0;t=7');
    expect(refused.headers.get('content-type')).toBe('application/problem+json');
    expect(await refused.json()).toMatchObject({
      status: 429,
      title: 'Too Many Requests',
      'violated-policies': ['api'],
      retryAfterSeconds: 7,
    });
    // Another client behind Cloudflare has its own bucket.
    expect((await app.request('/', { headers: { 'cf-connecting-ip': '198.51.100.1' } })).status).toBe(200);
  });

  it('without a socket or a trusted header, a request is refused with 400 (never counted as nobody)', async () => {
    const app = new Hono();
    app.use(rateLimit({ limiter: window10s() }));
    app.get('/', (c) => c.text('ran'));
    const reply = await app.request('/', { headers: FROM });
    expect(reply.status).toBe(400);
    expect(reply.headers.get('content-type')).toBe('application/problem+json');
  });

  it('identify reads what an earlier middleware set, typed through the app Env', async () => {
    type AppEnv = { Variables: { user: { id: string } | undefined } };
    const app = new Hono<AppEnv>();
    app.use(async (c, next) => {
      c.set('user', c.req.header('authorization') === 'Bearer ada' ? { id: 'ada' } : undefined);
      await next();
    });
    app.use(rateLimit<AppEnv>({ limiter: window10s('api', 1), identify: (c) => c.get('user')?.id, clientIp: CLOUDFLARE }));
    app.get('/', (c) => c.text(c.get('rateLimit').identity ?? 'none'));
    const ada = { ...FROM, authorization: 'Bearer ada' };
    expect(await (await app.request('/', { headers: ada })).text()).toBe('user:ada');
    expect((await app.request('/', { headers: ada })).status).toBe(429);
    // Same address, anonymous: the IP bucket, not Ada's.
    expect(await (await app.request('/', { headers: FROM })).text()).toBe('ip:203.0.113.7');
  });

  it('shadow mode counts and sends headers, never refuses, and reports would-be refusals', async () => {
    const would: boolean[] = [];
    const app = new Hono();
    app.use(
      rateLimit({ limiter: window10s('dark', 1), clientIp: CLOUDFLARE, shadow: true, onLimited: (event) => void would.push(event.shadow) }),
    );
    app.get('/', (c) => c.text(c.get('rateLimit').outcome));
    const replies = [];
    for (let i = 0; i < 3; i++) replies.push(await app.request('/', { headers: FROM }));
    expect(replies.map((r) => r.status)).toEqual([200, 200, 200]);
    expect(await Promise.all(replies.map((r) => r.text()))).toEqual(['allowed', 'shadow', 'shadow']);
    expect(replies.every((r) => r.headers.get('retry-after') === null)).toBe(true);
    expect(would).toEqual([true, true]);
  });

  it('skip: skipped requests get no headers and are not counted', async () => {
    const app = new Hono();
    app.use(rateLimit({ limiter: window10s('api', 1), clientIp: CLOUDFLARE, skip: (c) => c.req.path === '/health' }));
    app.get('/health', (c) => c.text(c.get('rateLimit').outcome));
    app.get('/', (c) => c.text('ok'));
    for (let i = 0; i < 3; i++) {
      const health = await app.request('/health', { headers: FROM });
      expect([health.status, await health.text(), health.headers.get('ratelimit')]).toEqual([200, 'skipped', null]);
    }
    expect((await app.request('/', { headers: FROM })).status).toBe(200);
    expect((await app.request('/', { headers: FROM })).status).toBe(429);
  });

  it('cost: a request takes the units the hook says; one larger than the limit can never pass: 413', async () => {
    const app = new Hono();
    app.use(rateLimit({ limiter: window10s('units', 5), clientIp: CLOUDFLARE, cost: (c) => Number(c.req.header('x-cost') ?? 1) }));
    app.get('/', (c) => c.text(String(c.get('rateLimit').decision?.remaining)));
    expect(await (await app.request('/', { headers: { ...FROM, 'x-cost': '3' } })).text()).toBe('2');
    expect(await (await app.request('/', { headers: { ...FROM, 'x-cost': '2' } })).text()).toBe('0');
    const other = { 'cf-connecting-ip': '198.51.100.9', 'x-cost': '6' };
    expect((await app.request('/', { headers: other })).status).toBe(413);
  });

  it('a shed limiter (kind: shed) answers 503 when the server is over capacity', async () => {
    const capacity = memoryLimiter({ name: 'capacity', rules: fixedWindow({ limit: 1, window: '10s' }), clock: fakeClock().read });
    const app = new Hono();
    app.use(rateLimit({ limiter: [window10s('api', 10), { limiter: capacity, kind: 'shed' }], clientIp: CLOUDFLARE }));
    app.get('/', (c) => c.text('ok'));
    expect((await app.request('/', { headers: FROM })).status).toBe(200);
    const shed = await app.request('/', { headers: { 'cf-connecting-ip': '198.51.100.2' } });
    expect(shed.status).toBe(503);
    expect(shed.headers.get('retry-after')).toBe('7');
    expect(await shed.json()).toMatchObject({ status: 503 });
  });

  it('two sluice middlewares on one request append their RateLimit items', async () => {
    const app = new Hono();
    app.use(rateLimit({ limiter: window10s('app', 5), clientIp: CLOUDFLARE }));
    app.use('/login', rateLimit({ limiter: window10s('login', 1), clientIp: CLOUDFLARE }));
    app.get('/login', (c) => c.text('ok'));
    const first = await app.request('/login', { headers: FROM });
    expect(first.headers.get('ratelimit')).toBe('"app";r=4;t=7, "login";r=0;t=7');
    const refused = await app.request('/login', { headers: FROM });
    expect(refused.status).toBe(429);
    expect(refused.headers.get('ratelimit')).toBe('"app";r=3;t=7, "login";r=0;t=7');
  });

  it('the headers reach a Response the route builds itself, even one with immutable headers', async () => {
    const app = new Hono();
    app.use(rateLimit({ limiter: window10s(), clientIp: CLOUDFLARE }));
    app.get('/raw', () => new Response('raw', { headers: { 'content-type': 'text/plain' } }));
    app.get('/redirect', () => Response.redirect('https://example.com/', 302));
    const raw = await app.request('/raw', { headers: FROM });
    expect([raw.headers.get('ratelimit'), raw.headers.get('content-type')]).toEqual(['"api";r=2;t=7', 'text/plain']);
    const redirect = await app.request('/redirect', { headers: FROM });
    expect([redirect.status, redirect.headers.get('ratelimit')]).toEqual([302, '"api";r=1;t=7']);
  });

  it('errors thrown by a hook go to app.onError, and the route does not run', async () => {
    const ran = vi.fn();
    const app = new Hono();
    app.use(
      rateLimit({
        limiter: window10s(),
        identify: () => {
          throw new Error('auth backend down');
        },
      }),
    );
    app.get('/', (c) => {
      ran();
      return c.text('ok');
    });
    app.onError((error, c) => c.text(`handled: ${(error as Error).message}`, 500));
    const reply = await app.request('/', { headers: FROM });
    expect([reply.status, await reply.text()]).toEqual([500, 'handled: auth backend down']);
    expect(ran).not.toHaveBeenCalled();
  });
});

describe('hooks and background work', () => {
  it("onLimited's and onDecision's promises go to c.executionCtx.waitUntil and do not delay the response", async () => {
    const ctx = executionContext();
    const shipment = deferred();
    const decided: HandleResult[] = [];
    const app = new Hono();
    app.use(
      rateLimit({
        limiter: window10s('api', 1),
        clientIp: CLOUDFLARE,
        onLimited: () => shipment.promise,
        onDecision: ({ result }) => {
          decided.push(result);
          return Promise.resolve();
        },
      }),
    );
    app.get('/', (c) => c.text('ok'));
    expect((await app.request('/', { headers: FROM }, undefined, ctx)).status).toBe(200);
    expect((await app.request('/', { headers: FROM }, undefined, ctx)).status).toBe(429); // answered while the shipment is pending
    expect(decided.map((r) => r.outcome)).toEqual(['allowed', 'limited']);
    expect(ctx.handed).toHaveLength(3); // two onDecision, one onLimited
    shipment.resolve();
    await Promise.all(ctx.handed);
  });

  it('a rejected hook promise goes to onError (source hook), never unhandled', async () => {
    const ctx = executionContext();
    const errors: string[] = [];
    const app = new Hono();
    app.use(
      rateLimit({
        limiter: window10s('api', 1),
        clientIp: CLOUDFLARE,
        onLimited: () => Promise.reject(new Error('log sink down')),
        onError: (error, event) => void errors.push(`${event.source}: ${(error as Error).message}`),
      }),
    );
    app.get('/', (c) => c.text('ok'));
    await app.request('/', { headers: FROM }, undefined, ctx);
    expect((await app.request('/', { headers: FROM }, undefined, ctx)).status).toBe(429);
    await Promise.all(ctx.handed);
    expect(errors).toEqual(['hook: log sink down']);
  });

  it('a failing store is reported to onError (source store) and the failure policy answers, marked degraded', async () => {
    const errors: string[] = [];
    const limiter = createLimiter({ name: 'api', store: brokenStore(), rules: fixedWindow({ limit: 1, window: '10s' }) });
    const app = new Hono();
    app.use(
      rateLimit({
        limiter,
        clientIp: CLOUDFLARE,
        onError: (error, event) => void errors.push(`${event.source}: ${(error as Error).message}`),
      }),
    );
    app.get('/', (c) => c.json({ degraded: c.get('rateLimit').degraded }));
    const reply = await app.request('/', { headers: FROM });
    expect([reply.status, await reply.json()]).toEqual([200, { degraded: true }]);
    expect(errors).toEqual(['store: [sluice] the store failed: connection refused']);
  });

  it('without an ExecutionContext (Node), hook promises still run and nothing throws', async () => {
    const shipped = deferred();
    const app = new Hono();
    app.use(
      rateLimit({
        limiter: window10s('api', 1),
        clientIp: CLOUDFLARE,
        onDecision: () => {
          shipped.resolve();
          return shipped.promise;
        },
      }),
    );
    app.get('/', (c) => c.text('ok'));
    expect((await app.request('/', { headers: FROM })).status).toBe(200);
    await shipped.promise;
  });
});

describe('the client address from the runtime', () => {
  const app = new Hono();
  app.use(rateLimit({ limiter: window10s('api', 10) }));
  app.get('/', (c) => c.text(c.get('rateLimit').identity ?? 'none'));

  it("Bun: the server's requestIP (Bun.serve({ fetch: app.fetch }) passes the server as c.env)", async () => {
    const server = { requestIP: () => ({ address: '192.0.2.10', family: 'IPv4', port: 4000 }) };
    expect(await (await app.request('/', {}, server)).text()).toBe('ip:192.0.2.10');
  });

  it("Deno: the handler info's remoteAddr (Deno.serve(app.fetch))", async () => {
    const info = { remoteAddr: { transport: 'tcp', hostname: '192.0.2.11', port: 4000 } };
    expect(await (await app.request('/', {}, info)).text()).toBe('ip:192.0.2.11');
  });

  it('Cloudflare bindings are not mistaken for a socket: no address, so 400', async () => {
    const bindings = { KV: {}, incoming: 'a binding that happens to be called incoming' };
    expect((await app.request('/', { headers: { 'x-forwarded-for': '192.0.2.12' } }, bindings)).status).toBe(400);
  });
});
