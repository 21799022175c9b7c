// Real HTTP: Hono on @hono/node-server (127.0.0.1, port 0), real clients (undici) whose connections come from
// chosen loopback addresses, so the socket address, the one thing a client cannot forge, is what identifies it.
import { serve, type ServerType } from '@hono/node-server';
import { fixedWindow } from '@sluice/core';
import { Hono } from 'hono';
import type { AddressInfo } from 'node:net';
import type { Server } from 'node:http';
import { Agent, fetch } from 'undici';
import { afterEach, describe, expect, it } from 'vitest';
import { rateLimit, type HonoRateLimitOptions } from '../src/index.js';
import { fakeClock, memoryLimiter } from './support.js';

const open: Array<() => Promise<void>> = [];
afterEach(async () => {
  await Promise.all(open.splice(0).map((close) => close()));
});

async function listen(app: Hono): Promise<string> {
  const server = await new Promise<ServerType>((resolve) => {
    const s = serve({ fetch: app.fetch, port: 0, hostname: '127.0.0.1' }, () => resolve(s));
  });
  open.push(() => {
    (server as Server).closeAllConnections();
    return new Promise((resolve) => server.close(() => resolve()));
  });
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

function client(localAddress: string) {
  const dispatcher = new Agent({ localAddress });
  open.push(() => dispatcher.close());
  return async (url: string, headers: Record<string, string> = {}) => {
    const response = await fetch(url, { headers, dispatcher });
    return { status: response.status, headers: response.headers, body: await response.text() };
  };
}

function appWith(options: Omit<HonoRateLimitOptions, 'limiter'>, limit = 2) {
  const limiter = memoryLimiter({ name: 'api', rules: fixedWindow({ limit, window: '10s' }), clock: fakeClock().read });
  const app = new Hono();
  app.use(rateLimit({ limiter, ...options }));
  app.get('/', (c) => c.json({ identity: c.get('rateLimit').identity, outcome: c.get('rateLimit').outcome }));
  return app;
}

describe('on @hono/node-server', () => {
  it('identifies clients by their socket address: allowed, then 429 with headers and a problem body', async () => {
    const url = await listen(appWith({}));
    const ada = client('127.0.0.2');
    for (const left of [1, 0]) {
      const reply = await ada(url, { 'x-forwarded-for': '198.51.100.1' }); // not trusted: ignored
      expect(reply.status).toBe(200);
      expect(reply.headers.get('ratelimit')).toBe(`"api";r=${left};t=7`);
      expect(JSON.parse(reply.body)).toEqual({ identity: 'ip:127.0.0.2', outcome: 'allowed' });
    }
    const refused = await ada(url, { 'x-forwarded-for': '198.51.100.2' });
    expect([refused.status, refused.headers.get('retry-after'), refused.headers.get('content-type')]).toEqual([
      429,
      '7',
      'application/problem+json',
    ]);
    expect(JSON.parse(refused.body)).toMatchObject({ status: 429, 'violated-policies': ['api'] });
    // A client on another address is someone else.
    expect((await client('127.0.0.3')(url)).status).toBe(200);
  });

  it('trusts a forwarding header only from a declared proxy', async () => {
    const url = await listen(appWith({ clientIp: { trustProxy: ['127.0.0.4'] } }));
    const proxy = client('127.0.0.4');
    expect(JSON.parse((await proxy(url, { 'x-forwarded-for': '198.51.100.7' })).body).identity).toBe('ip:198.51.100.7');
    // The same header from anyone else is ignored.
    expect(JSON.parse((await client('127.0.0.5')(url, { 'x-forwarded-for': '198.51.100.7' })).body).identity).toBe('ip:127.0.0.5');
  });

  it("platform: 'cloudflare' reads CF-Connecting-IP", async () => {
    const url = await listen(appWith({ clientIp: { platform: 'cloudflare' } }));
    const reply = await client('127.0.0.6')(url, { 'cf-connecting-ip': '203.0.113.9' });
    expect(JSON.parse(reply.body).identity).toBe('ip:203.0.113.9');
  });
});
