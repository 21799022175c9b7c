import { createLimiter, fixedWindow, type Limiter } from '@sluice/core';
import { memoryStore } from '@sluice/memory';
import Fastify, { type FastifyInstance } from 'fastify';
import { afterEach, describe, expect, it } from 'vitest';
import { RateLimitError, rateLimitPlugin } from '../src/index.js';

const apps: FastifyInstance[] = [];
afterEach(async () => {
  await Promise.all(apps.splice(0).map((app) => app.close()));
});

function limiter(name: string, limit: number): Limiter {
  return createLimiter({ name, store: memoryStore(), rules: fixedWindow({ limit, window: '1m' }) });
}

async function start(app: FastifyInstance): Promise<string> {
  apps.push(app);
  return app.listen({ port: 0, host: '127.0.0.1' });
}

async function statuses(url: string, count: number, init?: RequestInit): Promise<number[]> {
  const result: number[] = [];
  for (let i = 0; i < count; i++) result.push((await fetch(url, init)).status);
  return result;
}

describe('@sluice/fastify', () => {
  it('limits routes declared before and after registration, and unknown URLs, with one counter', async () => {
    const app = Fastify();
    app.get('/before', async (request) => ({ remaining: request.rateLimit?.decision?.remaining }));
    await app.register(rateLimitPlugin, { limiter: limiter('api', 3) });
    app.get('/after', async () => 'ok');
    const base = await start(app);
    expect(await (await fetch(`${base}/before`)).json()).toEqual({ remaining: 2 });
    expect((await fetch(`${base}/after`)).headers.get('ratelimit')).toMatch(/^"api";r=1;t=\d+$/);
    expect((await fetch(`${base}/nowhere`)).status).toBe(404);
    const refused = await fetch(`${base}/after`);
    expect(refused.status).toBe(429);
    expect(refused.headers.get('content-type')).toBe('application/problem+json; charset=utf-8');
    expect(Number(refused.headers.get('retry-after'))).toBeGreaterThan(0);
  });

  it('per-route config: opt out, own rules with own counters, and groups that share one counter', async () => {
    const app = Fastify();
    await app.register(rateLimitPlugin, {
      limiter: limiter('global', 100),
      store: memoryStore(),
      groups: { search: { rules: fixedWindow({ limit: 2, window: '1m' }) } },
    });
    app.get('/health', { config: { rateLimit: false } }, async () => 'ok');
    app.get('/a', { config: { rateLimit: { rules: fixedWindow({ limit: 1, window: '1m' }) } } }, async () => 'a');
    app.get('/b', { config: { rateLimit: { rules: fixedWindow({ limit: 1, window: '1m' }) } } }, async () => 'b');
    app.get('/search/users', { config: { rateLimit: 'search' } }, async () => 'users');
    app.get('/search/posts', { config: { rateLimit: { group: 'search' } } }, async () => 'posts');
    const base = await start(app);
    expect(await statuses(`${base}/health`, 3)).toEqual([200, 200, 200]);
    expect((await fetch(`${base}/health`)).headers.get('ratelimit')).toBeNull();
    expect(await statuses(`${base}/a`, 2)).toEqual([200, 429]);
    expect(await statuses(`${base}/b`, 2)).toEqual([200, 429]);
    const users = await fetch(`${base}/search/users`);
    expect(users.headers.get('ratelimit')).toMatch(/^"search";r=1;t=\d+$/);
    expect((await fetch(`${base}/search/posts`)).status).toBe(200);
    expect((await fetch(`${base}/search/users`)).status).toBe(429);
    expect((await fetch(`${base}/search/posts`)).status).toBe(429);
  });

  it('a GET route and its automatic HEAD route share one counter', async () => {
    const app = Fastify();
    await app.register(rateLimitPlugin, { store: memoryStore() });
    app.get('/doc', { config: { rateLimit: { rules: fixedWindow({ limit: 2, window: '1m' }) } } }, async () => 'doc');
    const base = await start(app);
    expect((await fetch(`${base}/doc`, { method: 'HEAD' })).status).toBe(200);
    expect((await fetch(`${base}/doc`)).status).toBe(200);
    expect((await fetch(`${base}/doc`, { method: 'HEAD' })).status).toBe(429);
  });

  it("hook: 'preHandler' runs after auth hooks, so the user id is there to limit by", async () => {
    const app = Fastify();
    await app.register(rateLimitPlugin, {
      limiter: limiter('per-user', 1),
      hook: 'preHandler',
      identify: (request) => (request as unknown as { user?: string }).user,
    });
    app.addHook('onRequest', async (request) => {
      (request as unknown as { user?: string }).user = String(request.headers['x-user'] ?? '');
    });
    app.get('/', async (request) => request.rateLimit?.identity);
    const base = await start(app);
    expect(await (await fetch(base, { headers: { 'x-user': 'ann' } })).text()).toBe('user:ann');
    expect((await fetch(base, { headers: { 'x-user': 'ann' } })).status).toBe(429);
    expect((await fetch(base, { headers: { 'x-user': 'bob' } })).status).toBe(200);
  });

  it("a route can ask for 'preHandler' alone; declared before the plugin, it is told to move", async () => {
    const app = Fastify();
    app.get('/early', { config: { rateLimit: { limiter: limiter('early', 1), hook: 'preHandler' } } }, async () => 'early');
    await app.register(rateLimitPlugin, {
      limiter: limiter('global', 100),
      identify: (request) => (request as unknown as { user?: string }).user,
    });
    app.addHook('onRequest', async (request) => {
      (request as unknown as { user?: string }).user = 'ann';
    });
    app.get(
      '/late',
      { config: { rateLimit: { limiter: limiter('late', 1), hook: 'preHandler' } } },
      async (request) => request.rateLimit?.identity,
    );
    app.get('/plain', async (request) => request.rateLimit?.identity);
    const base = await start(app);
    // The app-wide onRequest limiter runs before the auth hook, so it sees no user; the preHandler one sees ann.
    expect(await (await fetch(`${base}/plain`)).text()).toBe('ip:127.0.0.1');
    expect(await (await fetch(`${base}/late`)).text()).toBe('user:ann');
    expect((await fetch(`${base}/late`)).status).toBe(429);
    const early = await fetch(`${base}/early`);
    expect(early.status).toBe(500);
    expect(await early.text()).toMatch(/route \/early: hook 'preHandler' on a route declared before @sluice\/fastify was registered/);
  });

  it("errorResponse: 'throw' hands a RateLimitError to the app's error handler, headers already set", async () => {
    const app = Fastify();
    await app.register(rateLimitPlugin, { limiter: limiter('api', 1), errorResponse: 'throw' });
    app.setErrorHandler((error, _request, reply) => {
      if (error instanceof RateLimitError) return reply.code(error.statusCode).send({ custom: true, detail: error.problem?.detail });
      return reply.code(500).send({ error: String(error) });
    });
    app.get('/', async () => 'ok');
    const base = await start(app);
    await fetch(base);
    const refused = await fetch(base);
    expect(refused.status).toBe(429);
    expect(refused.headers.get('retry-after')).toMatch(/^\d+$/);
    expect(refused.headers.get('ratelimit')).toMatch(/^"api";r=0;t=\d+$/);
    expect(await refused.json()).toMatchObject({ custom: true, detail: expect.stringContaining('policy "api"') });
  });

  it("errors from hooks go through Fastify's error handler", async () => {
    const app = Fastify();
    await app.register(rateLimitPlugin, {
      limiter: limiter('api', 5),
      identify: async () => {
        throw new Error('session store down');
      },
    });
    app.get('/', async () => 'never');
    const base = await start(app);
    const response = await fetch(base);
    expect(response.status).toBe(500);
    expect(await response.json()).toMatchObject({ message: 'session store down' });
  });

  it('a bad route config fails at startup, naming the route', async () => {
    const app = Fastify();
    await app.register(rateLimitPlugin, { limiter: limiter('api', 5), groups: { g: { limiter: limiter('g', 1) } } });
    expect(() => app.get('/x', { config: { rateLimit: { rules: fixedWindow({ limit: 1, window: '1m' }) } } }, async () => 'x')).toThrow(
      /route \/x: rules need a store; pass store/,
    );
    expect(() => app.get('/y', { config: { rateLimit: 'nope' } }, async () => 'y')).toThrow(
      /names the group "nope", but the plugin's groups are g/,
    );
    expect(() => app.get('/z', { config: { rateLimit: { group: 'g', cost: 2 } } }, async () => 'z')).toThrow(
      /takes all its settings from the group; move cost there/,
    );
    await expect(
      Fastify()
        .register(rateLimitPlugin, { limiter: limiter('x', 1), hook: 'onSend' as 'onRequest' })
        .ready(),
    ).rejects.toThrow(/hook must be 'onRequest' or 'preHandler'/);
    await expect(
      Fastify()
        .register(rateLimitPlugin, { limiter: limiter('x', 1), max: 5 } as never)
        .ready(),
    ).rejects.toThrow(/unknown option "max"/);
  });

  it('a limiter passed where the options go says to pass { limiter }', async () => {
    await expect(
      Fastify()
        .register(rateLimitPlugin, limiter('x', 1) as never)
        .ready(),
    ).rejects.toThrow(
      '[sluice] @sluice/fastify options: got a limiter where the options object goes; pass { limiter } instead, e.g. app.register(rateLimitPlugin, { limiter })',
    );
    const app = Fastify();
    await app.register(rateLimitPlugin, {});
    expect(() => app.get('/x', { config: { rateLimit: limiter('y', 1) as never } }, async () => 'x')).toThrow(
      '[sluice] route /x: rateLimit: got a limiter where the options object goes; pass { limiter } instead, e.g. config: { rateLimit: { limiter } }',
    );
  });
});
