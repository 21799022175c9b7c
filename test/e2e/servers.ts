// Real listening servers for the end-to-end suites: one tiny app per framework (Express 5, Express 4, Fastify 5,
// Hono 4 on @hono/node-server)
// with the same routes, a real reverse proxy that appends X-Forwarded-For the way nginx does, and a real HTTP
// client (undici) that can pick its source address on the loopback network (127.0.0.2, 127.0.0.3, ...).
import type { HttpLimitOptions } from '@sluice/http';
import { rateLimit } from '@sluice/express';
import { rateLimitPlugin, type RouteRateLimitOptions } from '@sluice/fastify';
import { rateLimit as honoRateLimit } from '@sluice/hono';
import { serve as serveNode, type ServerType } from '@hono/node-server';
import express5 from 'express';
import express4 from 'express4';
import Fastify from 'fastify';
import { Hono } from 'hono';
import { createServer, request as httpRequest, type IncomingMessage, type Server } from 'node:http';
import { connect, type AddressInfo } from 'node:net';
import { Agent, fetch } from 'undici';
import { afterEach } from 'vitest';

export type Framework = 'express5' | 'express4' | 'fastify' | 'hono';
export const FRAMEWORKS: readonly Framework[] = ['express5', 'express4', 'fastify', 'hono'];

/**
 * The request path a hook sees, whatever the framework hands hooks: Express's and Fastify's request (`url`), or
 * Hono's context (`req.path`).
 */
export function pathOf(request: { url?: string; req?: { path: string } }): string | undefined {
  return request.req?.path ?? request.url;
}

export interface Route {
  readonly path: string;
  /** This route's own limiting; absent: only the app-wide options apply. */
  readonly limit?: HttpLimitOptions<never>;
}

export interface App {
  readonly url: string;
  readonly port: number;
  /** How many times the route at `path` ran (the middleware let the request through). */
  ran(path: string): number;
  close(): Promise<void>;
}

/** Each route answers `{ route, identity, outcome }` from what sluice left on the request. */
export async function serve(
  framework: Framework,
  appWide: HttpLimitOptions<never> | undefined,
  routes: readonly Route[],
  host = '127.0.0.1',
): Promise<App> {
  const runs = new Map<string, number>();
  const count = (path: string) => void runs.set(path, (runs.get(path) ?? 0) + 1);
  const ran = (path: string) => runs.get(path) ?? 0;
  if (framework === 'fastify') {
    const app = Fastify();
    await app.register(rateLimitPlugin, (appWide ?? {}) as never);
    for (const route of routes) {
      app.get(route.path, { config: { rateLimit: route.limit as RouteRateLimitOptions | undefined } }, async (request) => {
        count(route.path);
        return { route: route.path, identity: request.rateLimit?.identity, outcome: request.rateLimit?.outcome };
      });
    }
    await app.listen({ port: 0, host });
    const port = (app.server.address() as AddressInfo).port;
    return { url: base(host, port), port, ran, close: () => app.close() };
  }
  if (framework === 'hono') {
    const app = new Hono();
    if (appWide !== undefined) app.use(honoRateLimit(appWide as never));
    for (const route of routes) {
      if (route.limit !== undefined) app.use(route.path, honoRateLimit(route.limit as never));
      app.get(route.path, (c) => {
        count(route.path);
        const info = c.get('rateLimit');
        return c.json({ route: route.path, identity: info?.identity, outcome: info?.outcome });
      });
    }
    const server = await new Promise<ServerType>((resolve) => {
      const s = serveNode({ fetch: app.fetch, port: 0, hostname: host }, () => resolve(s));
    });
    const port = (server.address() as AddressInfo).port;
    return { url: base(host, port), port, ran, close: () => closeServer(server as Server) };
  }
  const app = (framework === 'express5' ? express5 : express4)();
  if (appWide !== undefined) app.use(rateLimit(appWide as never));
  for (const route of routes) {
    const own = route.limit === undefined ? [] : [rateLimit(route.limit as never)];
    app.get(route.path, ...own, (req: { rateLimit?: { identity?: string; outcome: string } }, res: { json(body: unknown): void }) => {
      count(route.path);
      res.json({ route: route.path, identity: req.rateLimit?.identity, outcome: req.rateLimit?.outcome });
    });
  }
  const server = await new Promise<Server>((resolve) => {
    const s: Server = app.listen(0, host, () => resolve(s));
  });
  const port = (server.address() as AddressInfo).port;
  return { url: base(host, port), port, ran, close: () => closeServer(server) };
}

function base(host: string, port: number): string {
  return host.includes(':') ? `http://[${host}]:${port}` : `http://${host}:${port}`;
}

function closeServer(server: Server): Promise<void> {
  server.closeAllConnections();
  return new Promise((resolve) => server.close(() => resolve()));
}

/**
 * A reverse proxy on 127.0.0.1 in front of `target`, doing what nginx's `$proxy_add_x_forwarded_for` does: it
 * keeps whatever X-Forwarded-For (or Forwarded) the client sent and appends the address the client connected from.
 */
export async function reverseProxy(target: App, header: 'x-forwarded-for' | 'forwarded' = 'x-forwarded-for'): Promise<App> {
  const server = createServer((req: IncomingMessage, res) => {
    const peer = (req.socket.remoteAddress ?? '').replace(/^::ffff:/, '');
    // With `forwarded`, what nginx's `$proxy_add_forwarded` recipes do: the client's header, then `for=<peer>`.
    const own = header === 'forwarded' ? (peer.includes(':') ? `for="[${peer}]"` : `for=${peer}`) : peer;
    const sent = req.headers[header];
    const headers = { ...req.headers, [header]: sent === undefined ? own : `${sent}, ${own}` };
    const upstream = httpRequest({ host: '127.0.0.1', port: target.port, method: req.method, path: req.url, headers }, (answer) => {
      res.writeHead(answer.statusCode ?? 502, answer.headers);
      answer.pipe(res);
    });
    upstream.on('error', () => res.destroy());
    req.pipe(upstream);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as AddressInfo).port;
  return { url: base('127.0.0.1', port), port, ran: () => 0, close: () => closeServer(server) };
}

export interface Reply {
  readonly status: number;
  readonly headers: Record<string, string>;
  readonly body: string;
}

/** A client whose connections come from `localAddress` (any 127.x.y.z works on Linux loopback). */
export function client(localAddress?: string) {
  const dispatcher = new Agent(localAddress === undefined ? {} : { localAddress });
  return {
    async get(url: string, headers: Record<string, string> = {}): Promise<Reply> {
      const response = await fetch(url, { headers, dispatcher });
      const body = await response.text();
      return { status: response.status, headers: Object.fromEntries(response.headers), body };
    },
    close: () => dispatcher.close(),
  };
}

/** The rate-limit related headers only, for exact comparisons (content-type included on refusals). */
export function limitHeaders(reply: Reply): Record<string, string> {
  const keep = /^(ratelimit|ratelimit-policy|retry-after|x-ratelimit-.*|ratelimit-.*)$/;
  return Object.fromEntries(Object.entries(reply.headers).filter(([name]) => keep.test(name)));
}

export function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

/**
 * Opens a connection from `localAddress`, writes `requests` pipelined GETs of `path` and resets the connection (TCP
 * RST) at once, reading no answer: what a client does that wants the route's side effects and not its response.
 */
export function sendAndReset(port: number, path: string, requests: number, localAddress: string): Promise<void> {
  return new Promise((resolve, reject) => {
    const socket = connect({ port, host: '127.0.0.1', localAddress }, () => {
      socket.write(`GET ${path} HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n`.repeat(requests));
      socket.resetAndDestroy();
      resolve();
    });
    socket.on('error', reject);
  });
}

/**
 * Headers a client sends to pass for another address: every one @sluice/http's platforms and chain readers know,
 * and the common ones no platform preset reads. Each names `address`.
 */
export function spoofingHeaders(address: string): Record<string, string> {
  const names = [
    'x-forwarded-for',
    'x-real-ip',
    'cf-connecting-ip',
    'true-client-ip',
    'fly-client-ip',
    'x-vercel-forwarded-for',
    'x-client-ip',
  ];
  return { ...Object.fromEntries(names.map((name) => [name, address])), forwarded: `for=${address}` };
}

/** Closes what it is handed (servers, clients) after each test of the calling file. */
export function closedAfterEach(): <T extends { close(): Promise<void> }>(item: T | Promise<T>) => Promise<T> {
  const open: Array<{ close(): Promise<void> }> = [];
  afterEach(async () => {
    await Promise.all(open.splice(0).map((item) => item.close()));
  });
  return async (item) => {
    const ready = await item;
    open.push(ready);
    return ready;
  };
}
