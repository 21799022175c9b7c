/**
 * The four limiters of the article 'Scaling your API with rate limiters' through trafficStack() on a real Express
 * server with real clients: the right status and problem body per layer (429 for rate and concurrency, 503 for the
 * shedders), which layer refused, the priority classes, and no leaked lease however a response ends (finished,
 * client aborted, handler threw).
 */
import { createLimiter, fixedWindow } from '@sluice/core';
import { createConcurrencyLimiter } from '@sluice/core/concurrency';
import { createFleetShedder, createUtilizationShedder } from '@sluice/core/shedding';
import { memoryStore } from '@sluice/memory';
import express from 'express';
import { request as httpRequest, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { trafficStack, type TrafficStackOptions } from '../src/index.js';

let server: Server | undefined;

afterEach(async () => {
  await new Promise<void>((resolve) => (server === undefined ? resolve() : server.close(() => resolve())));
  server = undefined;
});

/** An app with the stack in front of three routes: fast, slow (holds the request until `gate` opens) and failing. */
async function app(options: TrafficStackOptions): Promise<{ base: string; open: () => void; port: number }> {
  const application = express();
  let gate: Promise<void> = new Promise(() => undefined);
  let opener = (): void => undefined;
  const reset = () => {
    gate = new Promise((resolve) => (opener = resolve));
  };
  reset();
  application.use(trafficStack(options));
  application.get('/fast', (req, res) => void res.json({ ok: true, priority: req.trafficStack?.priority }));
  application.get('/slow', async (_req, res) => {
    await gate;
    res.json({ ok: true });
  });
  application.get('/throw', () => {
    throw new Error('handler failed');
  });
  application.use(
    (error: Error, _req: express.Request, res: express.Response, _next: express.NextFunction) =>
      void res.status(500).json({ error: error.message }),
  );
  await new Promise<void>((resolve) => {
    server = application.listen(0, '127.0.0.1', () => resolve());
  });
  const port = (server!.address() as AddressInfo).port;
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
const settle = () => new Promise((resolve) => setTimeout(resolve, 30));

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
    const store = memoryStore();
    const limiter = createConcurrencyLimiter({ store, limit: 2, name: 'in-flight' });
    const { base, open, port } = await app({
      concurrency: { limiter, identify: (req) => (req.headers['x-client'] as string | undefined) ?? 'anonymous' },
    });
    const headers = { 'x-client': 'alice' };
    const slow = [get(`${base}/slow`, headers), get(`${base}/slow`, headers)];
    await settle();
    const third = await get(`${base}/fast`, headers);
    expect(third.status).toBe(429);
    expect(third.headers.get('retry-after')).not.toBeNull();
    expect(await third.json()).toMatchObject({ status: 429, refusedBy: 'concurrency', 'violated-policies': ['in-flight'] });
    // Another client has slots of its own.
    expect((await get(`${base}/fast`, { 'x-client': 'bob' })).status).toBe(200);
    open();
    expect((await Promise.all(slow)).map((r) => r.status)).toEqual([200, 200]);
    await settle();
    // Two clients that go away mid-request, and a handler that throws: none of them keeps a slot.
    await Promise.all([abandoned(port, '/slow'), abandoned(port, '/slow')]);
    await settle();
    expect((await get(`${base}/throw`, headers)).status).toBe(500);
    await settle();
    const after = await Promise.all([get(`${base}/fast`, headers), get(`${base}/fast`, headers)]);
    expect(after.map((r) => r.status)).toEqual([200, 200]);
    open();
  });

  it('rate first: a request refused by the rate layer takes no lease', async () => {
    const store = memoryStore();
    const inFlight = createConcurrencyLimiter({ store, limit: 1, name: 'in-flight' });
    const { base } = await app({
      rate: { limiter: createLimiter({ store, rules: fixedWindow({ limit: 1, window: '1m' }), name: 'rate' }) },
      concurrency: { limiter: inFlight },
    });
    expect((await get(`${base}/fast`)).status).toBe(200);
    const refused = await get(`${base}/fast`);
    expect(refused.status).toBe(429);
    expect(await refused.json()).toMatchObject({ 'violated-policies': ['rate'] });
    const d = await inFlight.acquire('127.0.0.1');
    expect(d.allowed).toBe(true); // the refused request held nothing
  });

  it('fleet: non-critical work gets 503 past its share, critical still passes; worker: the lowest class is shed first', async () => {
    const fleet = createFleetShedder({ store: memoryStore(), capacity: 2, reserve: 0.5, classes: ['critical', 'normal'] });
    const { base, open } = await app({ fleet, priority: (req) => (req.headers['x-critical'] === '1' ? 'critical' : 'normal') });
    const slow = get(`${base}/slow`);
    await settle();
    const shed = await get(`${base}/fast`);
    expect(shed.status).toBe(503);
    expect(await shed.json()).toMatchObject({ status: 503, refusedBy: 'fleet', title: 'Service Unavailable' });
    expect((await get(`${base}/fast`, { 'x-critical': '1' })).status).toBe(200);
    open();
    await slow;

    let now = 1_700_000_000_000;
    const worker = createUtilizationShedder({ signal: () => 1, delay: 0, rampUp: '4s', clock: () => now, random: () => 0 });
    worker.check('critical');
    for (let i = 0; i < 2; i++) {
      now += 1000;
      worker.check('critical');
    } // a = 0.5 of 3 sheddable classes: test and half of read
    await new Promise<void>((resolve) => server!.close(() => resolve()));
    server = undefined;
    const second = await app({ worker, priority: (req) => (req.headers['x-class'] as string | undefined) ?? 'read' });
    const status = async (cls: string) => (await get(`${second.base}/fast`, { 'x-class': cls })).status;
    expect(await status('test')).toBe(503);
    expect(await status('critical')).toBe(200);
    expect(await status('write')).toBe(200);
  });

  it('refuses bad options clearly', () => {
    const fleet = createFleetShedder({ store: memoryStore(), capacity: 2 });
    expect(() => trafficStack({ fleet })).toThrow(/priority must be a function/);
    expect(() => trafficStack({ concurrency: { limiter: createConcurrencyLimiter({ store: memoryStore(), limit: 1 }) } })).toThrow(
      /concurrency needs identify/,
    );
    expect(() => trafficStack({ ratelimit: {} } as unknown as TrafficStackOptions)).toThrow(/unknown option "ratelimit"/);
  });
});
