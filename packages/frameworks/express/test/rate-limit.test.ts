import { createLimiter, fixedWindow, type Store } from '@sluice/core';
import { memoryStore } from '@sluice/memory';
import express5 from 'express';
import express4 from 'express4';
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { rateLimit } from '../src/index.js';

const servers: Server[] = [];
afterEach(async () => {
  await Promise.all(servers.splice(0).map((s) => new Promise((resolve) => s.close(resolve))));
});

async function listen(app: { listen(port: number, host: string, cb: () => void): Server }): Promise<string> {
  let server!: Server;
  await new Promise<void>((resolve) => {
    server = app.listen(0, '127.0.0.1', resolve);
  });
  servers.push(server);
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

function limiter(name: string, limit: number, store: Store = memoryStore()) {
  return createLimiter({ name, store, rules: fixedWindow({ limit, window: '1m' }) });
}

for (const [version, express] of [
  ['Express 5', express5],
  ['Express 4', express4],
] as const) {
  describe(version, () => {
    it('limits app-wide, sets req.rateLimit, and answers the refusal itself', async () => {
      const app = express();
      app.use(rateLimit({ limiter: limiter('api', 2) }));
      app.get('/', (req, res) => {
        res.json({ remaining: req.rateLimit?.decision?.remaining, identity: req.rateLimit?.identity });
      });
      const base = await listen(app);
      expect(await (await fetch(base)).json()).toEqual({ remaining: 1, identity: 'ip:127.0.0.1' });
      await fetch(base);
      const refused = await fetch(base);
      expect(refused.status).toBe(429);
      expect(refused.headers.get('content-type')).toBe('application/problem+json');
      expect(refused.headers.get('retry-after')).toMatch(/^\d+$/);
      expect(((await refused.json()) as { status: number }).status).toBe(429);
    });

    it('per-route limiters: only their routes count, and they stack on an app-wide one', async () => {
      const app = express();
      app.use(rateLimit({ limiter: limiter('global', 100) }));
      app.post('/login', rateLimit({ limiter: limiter('login', 1) }), (_req, res) => {
        res.send('ok');
      });
      app.get('/free', (_req, res) => {
        res.send('ok');
      });
      const base = await listen(app);
      const first = await fetch(`${base}/login`, { method: 'POST' });
      expect(first.headers.get('ratelimit')).toMatch(/^"global";r=99;t=\d+, "login";r=0;t=\d+$/);
      expect(first.headers.get('ratelimit-policy')).toBe('"global";q=100;w=60, "login";q=1;w=60');
      expect((await fetch(`${base}/login`, { method: 'POST' })).status).toBe(429);
      expect((await fetch(`${base}/free`)).status).toBe(200);
    });

    it('errors from hooks go to the error handler through next()', async () => {
      const app = express();
      app.use(
        rateLimit({
          limiter: limiter('api', 5),
          identify: () => {
            throw new Error('session lookup failed');
          },
        }),
      );
      app.get('/', (_req, res) => {
        res.send('never');
      });
      app.use((error: Error, _req: express5.Request, res: express5.Response, _next: express5.NextFunction) => {
        res.status(500).send(`handled: ${error.message}`);
      });
      const base = await listen(app);
      const response = await fetch(base);
      expect(response.status).toBe(500);
      expect(await response.text()).toBe('handled: session lookup failed');
    });

    it('works over an asynchronous store (the promise path)', async () => {
      const inner = memoryStore();
      const remote: Store = {
        capabilities: { synchronous: false, clock: 'client', operations: ['limit', 'reset'] },
        limit: async (r) => inner.limit(r),
        reset: async (k, ids) => inner.reset(k, ids),
      };
      const app = express();
      app.use(rateLimit({ limiter: limiter('remote', 1, remote) }));
      app.get('/', (_req, res) => {
        res.send('ok');
      });
      const base = await listen(app);
      expect((await fetch(base)).status).toBe(200);
      expect((await fetch(base)).status).toBe(429);
    });

    it('a shadow-banned request gets 200 and the configured body, and the route never runs', async () => {
      let ran = 0;
      const app = express();
      app.use(rateLimit({ limiter: limiter('api', 1), shadowBan: { body: '{"results":[]}' } }));
      app.get('/', (_req, res) => {
        ran++;
        res.json({ results: [1, 2, 3] });
      });
      const base = await listen(app);
      await fetch(base);
      const banned = await fetch(base);
      expect(banned.status).toBe(200);
      expect(await banned.json()).toEqual({ results: [] });
      // Like an allowed response, it carries RateLimit fields, and no Retry-After.
      expect(banned.headers.get('ratelimit')).toMatch(/^"api";r=0;t=\d+$/);
      expect(banned.headers.get('retry-after')).toBeNull();
      expect(ran).toBe(1);
    });
  });
}

describe('rateLimit(limiter): a limiter where the options go', () => {
  it("says to pass { limiter } rather than calling the limiter's name an unknown option", () => {
    expect(() => rateLimit(limiter('api', 1) as never)).toThrow(
      '[sluice] rate limit options: got a limiter where the options object goes; pass { limiter } instead, e.g. rateLimit({ limiter })',
    );
  });
});
