/**
 * trafficStackPlugin on a real Fastify server with real clients: 429 for concurrency and 503 for the shedders,
 * naming the layer; no leaked lease however a response ends (finished, client aborted, handler threw); the
 * concurrency identity taken from rateLimitPlugin when it runs first.
 */
import { createLimiter, fixedWindow } from '@sluice/core';
import { createConcurrencyLimiter } from '@sluice/core/concurrency';
import { createFleetShedder } from '@sluice/core/shedding';
import { memoryStore } from '@sluice/memory';
import Fastify, { type FastifyInstance } from 'fastify';
import { request as httpRequest } from 'node:http';
import { afterEach, describe, expect, it } from 'vitest';
import { rateLimitPlugin, trafficStackPlugin, type FastifyTrafficStackOptions } from '../src/index.js';

let app: FastifyInstance | undefined;

afterEach(async () => {
  await app?.close();
  app = undefined;
});

async function start(options: FastifyTrafficStackOptions, withRate = false) {
  const instance = Fastify();
  app = instance;
  let opener = (): void => undefined;
  let gate = new Promise<void>((resolve) => (opener = resolve));
  const store = memoryStore();
  if (withRate)
    await instance.register(rateLimitPlugin, {
      limiter: createLimiter({ store, rules: fixedWindow({ limit: 100, window: '1m' }), name: 'rate' }),
    });
  await instance.register(trafficStackPlugin, options);
  instance.get('/fast', async (request) => ({ ok: true, priority: request.trafficStack?.priority }));
  instance.get('/slow', async () => {
    await gate;
    return { ok: true };
  });
  instance.get('/throw', async () => {
    throw new Error('handler failed');
  });
  await instance.listen({ port: 0, host: '127.0.0.1' });
  const port = (instance.server.address() as { port: number }).port;
  return {
    base: `http://127.0.0.1:${port}`,
    port,
    open: () => {
      opener();
      gate = new Promise<void>((resolve) => (opener = resolve));
    },
  };
}

const get = (url: string, headers: Record<string, string> = {}) => fetch(url, { headers });
const settle = () => new Promise((resolve) => setTimeout(resolve, 30));

function abandoned(port: number, path: string, headers: Record<string, string>): Promise<void> {
  return new Promise((resolve) => {
    const req = httpRequest({ host: '127.0.0.1', port, path, headers });
    req.on('error', () => resolve());
    req.end();
    setTimeout(() => {
      req.destroy();
      resolve();
    }, 50);
  });
}

describe('trafficStackPlugin', () => {
  it('concurrency: 429 naming the layer past the limit; finished, aborted and failed requests all release', async () => {
    const limiter = createConcurrencyLimiter({ store: memoryStore(), limit: 2, name: 'in-flight' });
    const { base, open, port } = await start({
      concurrency: { limiter, identify: (request) => (request.headers['x-client'] as string | undefined) ?? 'anonymous' },
    });
    const headers = { 'x-client': 'alice' };
    const slow = [get(`${base}/slow`, headers), get(`${base}/slow`, headers)];
    await settle();
    const third = await get(`${base}/fast`, headers);
    expect(third.status).toBe(429);
    expect(third.headers.get('retry-after')).not.toBeNull();
    expect(await third.json()).toMatchObject({ status: 429, refusedBy: 'concurrency', 'violated-policies': ['in-flight'] });
    open();
    expect((await Promise.all(slow)).map((r) => r.status)).toEqual([200, 200]);
    await Promise.all([abandoned(port, '/slow', headers), abandoned(port, '/slow', headers)]);
    await settle();
    expect((await get(`${base}/throw`, headers)).status).toBe(500);
    await settle();
    expect((await Promise.all([get(`${base}/fast`, headers), get(`${base}/fast`, headers)])).map((r) => r.status)).toEqual([200, 200]);
    open();
  });

  it("takes the client from rateLimitPlugin's identity when that runs first", async () => {
    const limiter = createConcurrencyLimiter({ store: memoryStore(), limit: 1, name: 'in-flight' });
    const { base, open } = await start({ concurrency: { limiter } }, true);
    const slow = get(`${base}/slow`);
    await settle();
    expect((await get(`${base}/fast`)).status).toBe(429); // the same client address: one slot
    open();
    expect((await slow).status).toBe(200);
  });

  it('fleet: non-critical work gets 503 past its share; critical passes', async () => {
    const fleet = createFleetShedder({ store: memoryStore(), capacity: 2, reserve: 0.5, classes: ['critical', 'normal'] });
    const { base, open } = await start({ fleet, priority: (request) => (request.headers['x-critical'] === '1' ? 'critical' : 'normal') });
    const slow = get(`${base}/slow`);
    await settle();
    const shed = await get(`${base}/fast`);
    expect(shed.status).toBe(503);
    expect(await shed.json()).toMatchObject({ refusedBy: 'fleet' });
    expect((await get(`${base}/fast`, { 'x-critical': '1' })).status).toBe(200);
    open();
    await slow;
  });
});
