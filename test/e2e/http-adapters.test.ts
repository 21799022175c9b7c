// End to end: a real server per framework (Express 5, Express 4, Fastify 5, Hono 4) on 127.0.0.1, a real HTTP client.
// Behaviour: N allowed then 429 with exact headers, Retry-After honoured by a client that waits, per-route
// limiters, shadow mode, skip.
import { createLimiter, fixedWindow, type Limiter } from '@sluice/core';
import { memoryStore } from '@sluice/memory';
import { afterEach, describe, expect, it } from 'vitest';
import { client, FRAMEWORKS, limitHeaders, pathOf, serve, sleep, type App } from './servers.js';

const open: Array<{ close(): Promise<void> }> = [];
afterEach(async () => {
  await Promise.all(open.splice(0).map((item) => item.close()));
});

function limiter(name: string, limit: number, windowMs: number, clock?: () => number): Limiter {
  return createLimiter({ name, store: memoryStore(), rules: fixedWindow({ limit, window: windowMs }), ...(clock ? { clock } : {}) });
}

async function track<T extends { close(): Promise<void> }>(item: T | Promise<T>): Promise<T> {
  const ready = await item;
  open.push(ready);
  return ready;
}

for (const framework of FRAMEWORKS) {
  const problemType = framework === 'fastify' ? 'application/problem+json; charset=utf-8' : 'application/problem+json';

  describe(framework, () => {
    it('allows N, then answers 429 with exactly the right headers and body', async () => {
      // A fixed clock 3 s into a 10 s window makes every header value exact: 7 s left.
      const now = 1_700_000_003_000;
      const app: App = await track(serve(framework, { limiter: limiter('api', 3, 10_000, () => now) }, [{ path: '/' }]));
      const http = await track(client());
      for (const left of [2, 1, 0]) {
        const reply = await http.get(app.url);
        expect(reply.status).toBe(200);
        expect(limitHeaders(reply)).toEqual({ 'ratelimit-policy': '"api";q=3;w=10', ratelimit: `"api";r=${left};t=7` });
        expect(JSON.parse(reply.body)).toEqual({ route: '/', identity: 'ip:127.0.0.1', outcome: 'allowed' });
      }
      const refused = await http.get(app.url);
      expect(refused.status).toBe(429);
      expect(limitHeaders(refused)).toEqual({ 'ratelimit-policy': '"api";q=3;w=10', ratelimit: '"api";r=0;t=7', 'retry-after': '7' });
      expect(refused.headers['content-type']).toBe(problemType);
      expect(JSON.parse(refused.body)).toEqual({
        type: 'https://iana.org/assignments/http-problem-types#quota-exceeded',
        title: 'Too Many Requests',
        status: 429,
        detail:
          'You have used up the rate limit of policy "api" (3 units per 10 seconds). Retry after 7 seconds. The RateLimit response header shows what is left.',
        'violated-policies': ['api'],
        retryAfterSeconds: 7,
      });
    });

    it('a client that waits Retry-After seconds is let through again (real clock, 1 s window)', async () => {
      const app = await track(serve(framework, { limiter: limiter('burst', 2, 1_000) }, [{ path: '/' }]));
      const http = await track(client());
      // Start just after a window boundary so the two allowed requests surely share one window.
      await sleep(1_000 - (Date.now() % 1_000) + 20);
      expect((await http.get(app.url)).status).toBe(200);
      expect((await http.get(app.url)).status).toBe(200);
      const refused = await http.get(app.url);
      expect(refused.status).toBe(429);
      const wait = Number(refused.headers['retry-after']);
      expect(wait).toBe(1);
      expect(refused.headers.ratelimit).toBe(`"burst";r=0;t=${wait}`);
      await sleep(wait * 1_000);
      const again = await http.get(app.url);
      expect(again.status).toBe(200);
      expect(again.headers.ratelimit).toMatch(/^"burst";r=1;t=1$/);
    });

    it('per-route limiters count only their route', async () => {
      const app = await track(
        serve(framework, undefined, [{ path: '/strict', limit: { limiter: limiter('strict', 1, 60_000) } }, { path: '/free' }]),
      );
      const http = await track(client());
      expect((await http.get(`${app.url}/strict`)).status).toBe(200);
      expect((await http.get(`${app.url}/strict`)).status).toBe(429);
      for (let i = 0; i < 3; i++) {
        const free = await http.get(`${app.url}/free`);
        expect(free.status).toBe(200);
        expect(free.headers.ratelimit).toBeUndefined();
      }
    });

    it('shadow mode counts and sends headers but never refuses', async () => {
      const would: string[] = [];
      const app = await track(
        serve(framework, { limiter: limiter('dark', 2, 60_000), shadow: true, onLimited: (e) => void would.push(e.identity) }, [
          { path: '/' },
        ]),
      );
      const http = await track(client());
      const replies = [];
      for (let i = 0; i < 4; i++) replies.push(await http.get(app.url));
      expect(replies.map((r) => r.status)).toEqual([200, 200, 200, 200]);
      expect(replies.map((r) => r.headers.ratelimit?.split(';')[1])).toEqual(['r=1', 'r=0', 'r=0', 'r=0']);
      expect(replies.map((r) => JSON.parse(r.body).outcome)).toEqual(['allowed', 'allowed', 'shadow', 'shadow']);
      expect(replies.every((r) => r.headers['retry-after'] === undefined)).toBe(true);
      expect(would).toEqual(['ip:127.0.0.1', 'ip:127.0.0.1']);
    });

    it('skipped requests are neither limited nor counted', async () => {
      const app = await track(
        serve(
          framework,
          { limiter: limiter('api', 1, 60_000), skip: (req: { url?: string; req?: { path: string } }) => pathOf(req) === '/health' },
          [{ path: '/health' }, { path: '/' }],
        ),
      );
      const http = await track(client());
      for (let i = 0; i < 3; i++) {
        const health = await http.get(`${app.url}/health`);
        expect(health.status).toBe(200);
        expect(health.headers.ratelimit).toBeUndefined();
      }
      expect((await http.get(app.url)).status).toBe(200);
      expect((await http.get(app.url)).status).toBe(429);
    });
  });
}
