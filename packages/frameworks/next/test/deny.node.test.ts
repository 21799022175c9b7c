// The deny list through rateLimit() behind a real HTTP server and client on 127.0.0.1. The server plays the
// platform's edge (Vercel's): it overwrites x-vercel-forwarded-for with the connecting address, whatever the client
// sent, then hands a NextRequest to the proxy function, as Next.js does.
import { fixedWindow } from '@sluice/core';
import { PLATFORM_HEADERS, type DeniedEvent } from '@sluice/http';
import { NextRequest, type NextResponse } from 'next/server';
import { createServer, request, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { matchDenyList, rateLimit } from '../src/index.js';
import { memoryLimiter } from './support.js';

const open: Array<() => Promise<void>> = [];
afterEach(async () => {
  await Promise.all(open.splice(0).map((close) => close()));
});

async function serve(proxy: (request: NextRequest) => Promise<NextResponse>): Promise<string> {
  const server: Server = createServer((req, res) => {
    const headers = new Headers();
    for (const [name, value] of Object.entries(req.headers)) if (typeof value === 'string') headers.set(name, value);
    headers.set('x-vercel-forwarded-for', (req.socket.remoteAddress ?? '').replace(/^::ffff:/, ''));
    void proxy(new NextRequest(`http://127.0.0.1${req.url ?? '/'}`, { headers })).then(async (response) => {
      // NextResponse.next() means "run the route": this server's route answers 200.
      const passed = response.headers.get('x-middleware-next') === '1';
      const out: Record<string, string> = {};
      response.headers.forEach((value, name) => {
        if (name !== 'x-middleware-next') out[name] = value;
      });
      res.writeHead(passed ? 200 : response.status, out);
      res.end(passed ? 'route' : await response.text());
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  open.push(() => new Promise((resolve) => server.close(() => resolve())));
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}/api/items`;
}

/** A client whose connections come from `localAddress` (any 127.x.y.z works on Linux loopback). */
function client(localAddress: string) {
  return (url: string, headers: Record<string, string> = {}) =>
    new Promise<{ status: number; headers: Record<string, string | string[] | undefined>; body: string }>((resolve, reject) => {
      const sent = request(url, { localAddress, headers }, (response) => {
        let body = '';
        response.setEncoding('utf8');
        response.on('data', (chunk: string) => (body += chunk));
        response.on('end', () => resolve({ status: response.statusCode ?? 0, headers: response.headers, body }));
      });
      sent.on('error', reject);
      sent.end();
    });
}

/** What a client adds to pass for 198.51.100.9: the platform's own header (the edge overwrites it) and every other. */
const SPOOFS: Record<string, string> = Object.fromEntries(
  [...Object.values(PLATFORM_HEADERS).flat(), 'x-forwarded-for', 'true-client-ip'].map((name) => [name, '198.51.100.9']),
);
SPOOFS.forwarded = 'for=198.51.100.9';

describe('rateLimit(): the deny list over real HTTP', () => {
  it('answers a denied address 403 with reason denied whatever it sends, and limits others as before', async () => {
    const limiter = memoryLimiter({ name: 'api', rules: fixedWindow({ limit: 2, window: '1m' }) });
    limiter.configure({ deny: [{ match: '127.0.0.2', reason: 'abuse report' }] });
    const url = await serve(rateLimit({ limiter, denyList: matchDenyList, clientIp: { platform: 'vercel' } }));
    const denied = client('127.0.0.2');
    for (const headers of [{}, SPOOFS, ...Object.entries(SPOOFS).map(([name, value]) => ({ [name]: value }))]) {
      const refused = await denied(url, headers);
      expect(refused.status).toBe(403);
      expect(refused.headers.ratelimit).toBeUndefined();
      expect(refused.headers['retry-after']).toBeUndefined();
      expect(JSON.parse(refused.body)).toMatchObject({ status: 403, reason: 'denied', denyReason: 'abuse report' });
    }
    const other = client('127.0.0.3');
    const statuses = [];
    for (let i = 0; i < 3; i++) statuses.push((await other(url)).status);
    expect(statuses).toEqual([200, 200, 429]);
  });

  it("the deny list's shadow mode reports the would-be denial to onDenied and lets the request through", async () => {
    const events: DeniedEvent<NextRequest>[] = [];
    const limiter = memoryLimiter({ name: 'api', rules: fixedWindow({ limit: 5, window: '1m' }) });
    limiter.configure({ deny: [{ match: '127.0.0.4' }], denyMode: 'shadow' });
    const url = await serve(
      rateLimit({ limiter, denyList: matchDenyList, clientIp: { platform: 'vercel' }, onDenied: (event) => void events.push(event) }),
    );
    const reply = await client('127.0.0.4')(url);
    expect([reply.status, reply.body]).toEqual([200, 'route']);
    expect(events).toMatchObject([{ identity: 'ip:127.0.0.4', shadow: true }]);
  });

  it("the limiter's shadow mode (its kill switch's dark launch) does not lift the deny list: still 403", async () => {
    const limiter = memoryLimiter({ name: 'api', rules: fixedWindow({ limit: 5, window: '1m' }), mode: 'shadow' });
    limiter.configure({ deny: [{ match: '127.0.0.5' }] });
    const url = await serve(rateLimit({ limiter, denyList: matchDenyList, clientIp: { platform: 'vercel' } }));
    expect((await client('127.0.0.5')(url)).status).toBe(403);
  });
});

describe('rateLimit(): onDenied may return a promise', () => {
  it('hands the rejection of a promise it returns to onError, never unhandled', async () => {
    const limiter = memoryLimiter({ name: 'api', rules: fixedWindow({ limit: 5, window: '1m' }) });
    limiter.configure({ deny: [{ match: '127.0.0.6' }] });
    let reported!: (error: unknown) => void;
    const failure = new Promise<unknown>((resolve) => (reported = resolve));
    const onDenied = () => Promise.reject(new Error('log shipment failed'));
    const url = await serve(
      rateLimit({ limiter, denyList: matchDenyList, clientIp: { platform: 'vercel' }, onDenied, onError: (error) => reported(error) }),
    );
    expect((await client('127.0.0.6')(url)).status).toBe(403);
    expect(String(await failure)).toContain('log shipment failed');
  });
});
