/**
 * withTrafficStack around a route handler. First the adapters' shared traffic stack suite
 * (test/harness/adapter-traffic-stack.ts) behind a real HTTP server and real clients. The server plays Next.js's
 * part: it overwrites x-vercel-forwarded-for with the connecting address (as Vercel's edge does), hands the handler a
 * NextRequest, streams the response body to the socket, and cancels that body when the client goes away. The slow
 * route streams: its head goes out at once and its body waits, so its leases are held until the body has been read
 * to its end or cancelled. The server is Node's, but the handler runs on the environment's globals, so under the edge
 * project it runs on the edge runtime's Request, Response and streams. Then the same lease, handler by handler.
 */
import { createConcurrencyLimiter } from '@sluice/core/concurrency';
import { memoryStore } from '@sluice/memory';
import { NextRequest } from 'next/server';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { describe, expect, it } from 'vitest';
import { describeAdapterTrafficStack } from '../../../../test/harness/adapter-traffic-stack.js';
import { rateLimit, withTrafficStack, type NextTrafficStackOptions } from '../src/index.js';
import { nextRequest } from './support.js';

type Handler = (request: NextRequest, context: object) => Promise<Response>;

const json = (value: unknown) => new TextEncoder().encode(JSON.stringify(value));

/** The app's routes: /fast, /slow (its body held until `hold()` resolves) and /throw. */
function routes(hold: () => Promise<void>) {
  return async (request: NextRequest): Promise<Response> => {
    const path = request.nextUrl.pathname;
    if (path === '/throw') throw new Error('handler failed');
    if (path !== '/slow') return Response.json({ ok: true });
    const body = new ReadableStream<Uint8Array>({
      async pull(controller) {
        await hold();
        controller.enqueue(json({ ok: true }));
        controller.close();
      },
    });
    return new Response(body, { headers: { 'content-type': 'application/json' } });
  };
}

/** A Node server in front of a route handler, doing what Next.js's server does for it. */
async function listen(handler: Handler): Promise<Server> {
  const server = createServer(async (req, res) => {
    const headers = new Headers();
    for (const [name, value] of Object.entries(req.headers)) if (typeof value === 'string') headers.set(name, value);
    headers.set('x-vercel-forwarded-for', (req.socket.remoteAddress ?? '').replace(/^::ffff:/, ''));
    let response: Response;
    try {
      response = await handler(new NextRequest(`http://127.0.0.1${req.url ?? '/'}`, { method: req.method, headers }), {});
    } catch (error) {
      res.writeHead(500, { 'content-type': 'application/json' }).end(JSON.stringify({ error: (error as Error).message }));
      return;
    }
    const head: Record<string, string> = {};
    response.headers.forEach((value, name) => (head[name] = value));
    res.writeHead(response.status, head);
    if (response.body === null) {
      res.end();
      return;
    }
    const reader = response.body.getReader();
    res.on('close', () => {
      if (!res.writableFinished) void reader.cancel().catch(() => undefined);
    });
    try {
      for (let chunk = await reader.read(); !chunk.done; chunk = await reader.read()) res.write(chunk.value);
      res.end();
    } catch {
      res.destroy();
    }
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return server;
}

describeAdapterTrafficStack<NextRequest>({
  name: 'next',
  create: (options) => withTrafficStack(async () => new Response(), options),
  header: (request, name) => request.headers.get(name) ?? undefined,
  loopbackIdentity: 'ip:127.0.0.1',
  rateLayer: 'option',
  reportsInfo: false,
  serve: async ({ stack, rate, hold }) => {
    const options: NextTrafficStackOptions =
      rate === undefined ? stack : { ...stack, rate: rateLimit({ limiter: rate, clientIp: { platform: 'vercel' } }) };
    const server = await listen(withTrafficStack(routes(hold), options));
    return {
      port: (server.address() as AddressInfo).port,
      close: () => {
        server.closeAllConnections();
        return new Promise<void>((resolve) => server.close(() => resolve()));
      },
    };
  },
});

const client = (request: { headers: Headers }) => request.headers.get('x-client') ?? 'anonymous';

describe('withTrafficStack', () => {
  it('holds a concurrency lease until the body is read, cancelled or the handler threw', async () => {
    const inFlight = createConcurrencyLimiter({ store: memoryStore(), limit: 1, name: 'in-flight' });
    let fail = false;
    const handler = withTrafficStack(
      async () => {
        if (fail) throw new Error('handler failed');
        return new Response('a body in one chunk');
      },
      { concurrency: { limiter: inFlight, identify: client } },
    );
    const request = () => nextRequest({ 'x-client': 'alice' });
    const first = await handler(request(), {});
    expect(first.status).toBe(200);
    // The body has not been read: the lease is still held.
    const refused = await handler(request(), {});
    expect(refused.status).toBe(429);
    expect(refused.headers.get('retry-after')).not.toBeNull();
    expect(await refused.json()).toMatchObject({ refusedBy: 'concurrency', 'violated-policies': ['in-flight'] });
    expect(await first.text()).toBe('a body in one chunk');
    await new Promise((resolve) => setTimeout(resolve, 0));
    const second = await handler(request(), {});
    expect(second.status).toBe(200);
    await second.body!.cancel(); // the client went away
    await new Promise((resolve) => setTimeout(resolve, 0));
    const third = await handler(request(), {});
    expect(third.status).toBe(200); // the cancelled body gave its lease back
    await third.text();
    await new Promise((resolve) => setTimeout(resolve, 0));
    fail = true;
    await expect(handler(request(), {})).rejects.toThrow('handler failed');
    await new Promise((resolve) => setTimeout(resolve, 0));
    fail = false;
    expect((await handler(request(), {})).status).toBe(200);
  });
});
