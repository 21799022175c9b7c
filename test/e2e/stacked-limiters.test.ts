// End to end: two limiters on one route, an app-wide compound one (`api/burst`, `api/day`) and the route's `login`
// limiter, on a real server per framework on 127.0.0.1. When `login` refuses, the 429's Retry-After is its wait and
// no `t` in RateLimit exceeds it, the items the app-wide middleware wrote before it included; an allowed response
// keeps every rule's own `t`. Express and Hono stack two middlewares; Fastify's route config replaces the plugin's
// limiter, so its route lists both, as its README says. The same holds when a traffic stack's later layer (here the
// worker shedder, 503) refuses after the rate layer let the request through.
import { createLimiter, fixedWindow, type Limiter } from '@sluice/core';
import { createUtilizationShedder, type UtilizationShedder } from '@sluice/core/shedding';
import { trafficStack } from '@sluice/express';
import { rateLimitPlugin, trafficStackPlugin } from '@sluice/fastify';
import { trafficStack as honoTrafficStack } from '@sluice/hono';
import { memoryStore } from '@sluice/memory';
import { serve as serveNode, type ServerType } from '@hono/node-server';
import express5 from 'express';
import express4 from 'express4';
import Fastify from 'fastify';
import { Hono } from 'hono';
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { describe, expect, it } from 'vitest';
import { client, closedAfterEach, FRAMEWORKS, serve, type Framework } from './servers.js';

const track = closedAfterEach();

// A fixed clock 37 s before a minute, 97 s before a quarter hour and 6397 s before midnight (UTC) makes every `t` exact.
const NOW = 1_700_000_003_000;
const TO_MINUTE = Math.ceil((60_000 - (NOW % 60_000)) / 1000);
const TO_QUARTER = Math.ceil((900_000 - (NOW % 900_000)) / 1000);
const TO_MIDNIGHT = Math.ceil((86_400_000 - (NOW % 86_400_000)) / 1000);

function limiters(): { api: Limiter; login: Limiter } {
  const clock = () => NOW;
  const api = createLimiter({
    name: 'api',
    store: memoryStore(),
    clock,
    rules: [fixedWindow({ limit: 10, window: '1m', id: 'burst' }), fixedWindow({ limit: 1000, window: '1d', id: 'day' })],
  });
  const login = createLimiter({ name: 'login', store: memoryStore(), clock, rules: fixedWindow({ limit: 1, window: '15m' }) });
  return { api, login };
}

interface Item {
  readonly name: string;
  readonly params: Readonly<Record<string, number>>;
}

/**
 * A draft-11 `RateLimit` field as the structured-field List it is (RFC 8941): items that are sf-strings with integer
 * parameters. Anything else fails the test, so a malformed merge cannot pass unnoticed.
 */
function parseRateLimit(field: string | undefined): Item[] {
  expect(field).toBeDefined();
  const items: Item[] = [];
  const item = /\s*"((?:[^"\\]|\\["\\])*)"((?:;[a-z*][a-z0-9_.*-]*=-?\d{1,15})*)\s*(?:,|$)/y;
  let at = 0;
  while (at < field!.length) {
    item.lastIndex = at;
    const match = item.exec(field!);
    if (match === null) throw new Error(`not a RateLimit List at ${at}: ${field}`);
    const params: Record<string, number> = {};
    for (const param of match[2]!.split(';').slice(1)) {
      const [key, value] = param.split('=');
      params[key!] = Number(value);
    }
    items.push({ name: match[1]!.replace(/\\(["\\])/g, '$1'), params });
    at = item.lastIndex;
  }
  return items;
}

for (const framework of FRAMEWORKS) {
  describe(framework, () => {
    it('a route limiter refusing after an app-wide compound limiter: every t on the 429 is at most its Retry-After', async () => {
      const { api, login } = limiters();
      const route = framework === 'fastify' ? { limiter: [api, login] } : { limiter: login };
      const app = await track(serve(framework, { limiter: api }, [{ path: '/login', limit: route }]));
      const http = await track(client());

      const allowed = await http.get(`${app.url}/login`);
      expect(allowed.status).toBe(200);
      expect(allowed.headers['retry-after']).toBeUndefined();
      // An allowed response reports each rule's own effective window: the day rule's is hours, not capped.
      expect(parseRateLimit(allowed.headers.ratelimit).map((i) => [i.name, i.params.t])).toEqual([
        ['api/burst', TO_MINUTE],
        ['api/day', TO_MIDNIGHT],
        ['login', TO_QUARTER],
      ]);

      const refused = await http.get(`${app.url}/login`);
      expect(refused.status).toBe(429);
      expect(app.ran('/login')).toBe(1);
      // Retry-After is the refusing limiter's wait: the quarter hour's end.
      expect(refused.headers['retry-after']).toBe(String(TO_QUARTER));
      expect(JSON.parse(refused.body)).toMatchObject({ 'violated-policies': ['login'], retryAfterSeconds: TO_QUARTER });
      const items = parseRateLimit(refused.headers.ratelimit);
      expect(items.map((i) => i.name)).toEqual(['api/burst', 'api/day', 'login']);
      for (const { name, params } of items) {
        expect(params.t, name).toBeGreaterThanOrEqual(0);
        expect(params.t, name).toBeLessThanOrEqual(Number(refused.headers['retry-after']));
      }
      // The burst rule's own window is shorter and stays; the day rule's is capped; the refusing item is the wait.
      expect(items.map((i) => i.params.t)).toEqual([TO_MINUTE, TO_QUARTER, TO_QUARTER]);
      expect(items.map((i) => i.params.r)).toEqual(framework === 'fastify' ? [9, 999, 0] : [8, 998, 0]);
    });
  });
}

/** A worker shedder already shedding everything but `critical`: the utilization signal has been 1 for its ramp-up. */
function overloadedWorker(): UtilizationShedder {
  let now = NOW;
  const worker = createUtilizationShedder({
    signal: () => 1,
    delay: 0,
    rampUp: '4s',
    classes: ['critical', 'test'],
    clock: () => now,
    random: () => 0,
  });
  for (let i = 0; i < 6; i++, now += 1000) worker.check('critical');
  return worker;
}

/** One route `/` behind the traffic stack: the rate layer `api`, then the worker shedder, every request `test`. */
async function stackApp(framework: Framework, api: Limiter, worker: UtilizationShedder): Promise<{ url: string; close(): Promise<void> }> {
  const priority = () => 'test';
  if (framework === 'fastify') {
    const app = Fastify();
    await app.register(rateLimitPlugin, { limiter: api });
    await app.register(trafficStackPlugin, { worker, priority });
    app.get('/', async () => ({ ok: true }));
    await app.listen({ port: 0, host: '127.0.0.1' });
    return { url: `http://127.0.0.1:${(app.server.address() as AddressInfo).port}`, close: () => app.close() };
  }
  let server: Server;
  if (framework === 'hono') {
    const app = new Hono();
    app.use(honoTrafficStack({ rate: { limiter: api }, worker, priority }));
    app.get('/', (c) => c.json({ ok: true }));
    server = (await new Promise<ServerType>((resolve) => {
      const s = serveNode({ fetch: app.fetch, port: 0, hostname: '127.0.0.1' }, () => resolve(s));
    })) as Server;
  } else {
    const app = (framework === 'express5' ? express5 : express4)();
    app.use(trafficStack({ rate: { limiter: api }, worker, priority }));
    app.get('/', (_req: unknown, res: { json(body: unknown): void }) => res.json({ ok: true }));
    server = await new Promise<Server>((resolve) => {
      const s: Server = app.listen(0, '127.0.0.1', () => resolve(s));
    });
  }
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    close: () => {
      server.closeAllConnections();
      return new Promise((resolve) => server.close(() => resolve()));
    },
  };
}

for (const framework of FRAMEWORKS) {
  describe(`${framework} traffic stack`, () => {
    it('the worker shedder refusing after the rate layer let the request through: every t on the 503 is at most its Retry-After', async () => {
      const { api } = limiters();
      const app = await track(stackApp(framework, api, overloadedWorker()));
      const http = await track(client());
      const shed = await http.get(app.url);
      expect(shed.status).toBe(503);
      expect(JSON.parse(shed.body)).toMatchObject({ refusedBy: 'worker' });
      const retryAfter = Number(shed.headers['retry-after']);
      expect(retryAfter).toBeGreaterThanOrEqual(1);
      expect(retryAfter).toBeLessThan(TO_MINUTE);
      const items = parseRateLimit(shed.headers.ratelimit);
      expect(items.map((i) => [i.name, i.params.r, i.params.t])).toEqual([
        ['api/burst', 9, retryAfter],
        ['api/day', 999, retryAfter],
      ]);
    });
  });
}
