/**
 * trafficStack() on a real @hono/node-server with real clients: the status and problem body per layer (429 for
 * rate and concurrency, 503 for the fleet shedder), c.get('trafficStack'), and no leaked lease however a response
 * ends (finished, client aborted mid-request, route threw).
 */
import { serve, type ServerType } from '@hono/node-server';
import { createLimiter, fixedWindow } from '@sluice/core';
import { createConcurrencyLimiter } from '@sluice/core/concurrency';
import { createFleetShedder } from '@sluice/core/shedding';
import { memoryStore } from '@sluice/memory';
import { Hono } from 'hono';
import { request as httpRequest, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { trafficStack, type HonoTrafficStackOptions } from '../src/index.js';

let server: ServerType | undefined;
afterEach(async () => {
  const open = server;
  server = undefined;
  if (open === undefined) return;
  (open as Server).closeAllConnections();
  await new Promise<void>((resolve) => open.close(() => resolve()));
});

/** An app with the stack in front of three routes: fast, slow (held until `open()`) and failing. */
async function app(options: HonoTrafficStackOptions) {
  let opener = (): void => undefined;
  let gate!: Promise<void>;
  const reset = () => void (gate = new Promise((resolve) => (opener = resolve)));
  reset();
  const application = new Hono();
  application.use(trafficStack(options));
  application.get('/fast', (c) => c.json({ ok: true, stack: c.get('trafficStack') }));
  application.get('/slow', async (c) => {
    await gate;
    return c.json({ ok: true });
  });
  application.get('/throw', () => {
    throw new Error('route failed');
  });
  application.onError((error, c) => c.json({ error: error.message }, 500));
  const started = await new Promise<ServerType>((resolve) => {
    const s = serve({ fetch: application.fetch, port: 0, hostname: '127.0.0.1' }, () => resolve(s));
  });
  server = started;
  const port = (started.address() as AddressInfo).port;
  return {
    base: `http://127.0.0.1:${port}`,
    port,
    open: () => {
      opener();
      reset();
    },
  };
}

const get = (url: string, headers: Record<string, string> = {}) => fetch(url, { headers });
const settle = () => new Promise((resolve) => setTimeout(resolve, 50));

/** Starts a request and destroys its socket once the server has it: a client that went away. */
function abandoned(port: number, path: string): Promise<void> {
  return new Promise((resolve) => {
    const req = httpRequest({ host: '127.0.0.1', port, path, headers: { 'x-client': 'alice' } });
    req.on('error', () => resolve());
    req.end();
    setTimeout(() => {
      req.destroy();
      resolve();
    }, 50);
  });
}

describe('trafficStack', () => {
  it('concurrency: a third request in flight gets 429 naming the layer; finished, aborted and failed requests all release', async () => {
    const limiter = createConcurrencyLimiter({ store: memoryStore(), limit: 2, name: 'in-flight' });
    const { base, open, port } = await app({ concurrency: { limiter, identify: (c) => c.req.header('x-client') ?? 'anonymous' } });
    const headers = { 'x-client': 'alice' };
    const slow = [get(`${base}/slow`, headers), get(`${base}/slow`, headers)];
    await settle();
    const third = await get(`${base}/fast`, headers);
    expect(third.status).toBe(429);
    expect(third.headers.get('retry-after')).not.toBeNull();
    expect(await third.json()).toMatchObject({ status: 429, refusedBy: 'concurrency', 'violated-policies': ['in-flight'] });
    expect((await get(`${base}/fast`, { 'x-client': 'bob' })).status).toBe(200);
    open();
    expect((await Promise.all(slow)).map((r) => r.status)).toEqual([200, 200]);
    await settle();
    // Two clients that go away mid-request, and a route that throws: none of them keeps a slot.
    await Promise.all([abandoned(port, '/slow'), abandoned(port, '/slow')]);
    await settle();
    expect((await get(`${base}/throw`, headers)).status).toBe(500);
    await settle();
    const after = await Promise.all([get(`${base}/fast`, headers), get(`${base}/fast`, headers)]);
    expect(after.map((r) => r.status)).toEqual([200, 200]);
    expect((await after[0]!.json()).stack).toEqual({});
    open();
  });

  it('rate first: a request refused by the rate layer takes no lease and carries the RateLimit headers', async () => {
    const store = memoryStore();
    const inFlight = createConcurrencyLimiter({ store, limit: 1, name: 'in-flight' });
    const rate = { limiter: createLimiter({ store, rules: fixedWindow({ limit: 1, window: '1m' }), name: 'rate' }) };
    const { base } = await app({ rate, concurrency: { limiter: inFlight } });
    expect((await get(`${base}/fast`)).status).toBe(200);
    const refused = await get(`${base}/fast`);
    expect(refused.status).toBe(429);
    expect(refused.headers.get('ratelimit')).toMatch(/^"rate";r=0;t=\d+$/);
    expect(await refused.json()).toMatchObject({ 'violated-policies': ['rate'] });
    expect((await inFlight.acquire('ip:127.0.0.1')).allowed).toBe(true); // the refused request held nothing
  });

  it('fleet: non-critical work gets 503 past its share, critical still passes', async () => {
    const fleet = createFleetShedder({ store: memoryStore(), capacity: 2, reserve: 0.5, classes: ['critical', 'normal'] });
    const { base, open } = await app({ fleet, priority: (c) => (c.req.header('x-critical') === '1' ? 'critical' : 'normal') });
    const slow = get(`${base}/slow`);
    await settle();
    const shed = await get(`${base}/fast`);
    expect(shed.status).toBe(503);
    expect(await shed.json()).toMatchObject({ status: 503, refusedBy: 'fleet', title: 'Service Unavailable' });
    const critical = await get(`${base}/fast`, { 'x-critical': '1' });
    expect(critical.status).toBe(200);
    expect((await critical.json()).stack).toEqual({ priority: 'critical' });
    open();
    await slow;
  });

  it('refuses bad options clearly', () => {
    const fleet = createFleetShedder({ store: memoryStore(), capacity: 2 });
    expect(() => trafficStack({ fleet })).toThrow(/priority must be a function/);
    expect(() => trafficStack({ concurrency: { limiter: createConcurrencyLimiter({ store: memoryStore(), limit: 1 }) } })).toThrow(
      /concurrency needs identify/,
    );
    expect(() => trafficStack({ ratelimit: {} } as unknown as HonoTrafficStackOptions)).toThrow(/unknown option "ratelimit"/);
  });
});
