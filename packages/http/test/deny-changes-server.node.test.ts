/// <reference types="node" />
// A change of some entries of a limiter's deny list (the change() of a live deny list) through the handler behind a real
// HTTP server and client on 127.0.0.1: the server hands each request's socket address to the handler, and each
// client connects from an address of its own on the loopback (any 127.x.y.z works on Linux).
import { fixedWindow } from '@sluice/core';
import { liveDenyList, type LiveDenyLineage } from '@sluice/core/config';
import { createServer, request, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { COMPILE_AT_ONCE } from '../src/handler/deny/compile.js';
import { writeHeaders } from '../src/adapter/index.js';
import { createHandler, matchDenyList, type DenyEntry } from '../src/index.js';
import { memoryLimiter } from './support.js';

const open: Array<() => Promise<void>> = [];
afterEach(async () => {
  await Promise.all(open.splice(0).map((close) => close()));
});

async function serve(handler: ReturnType<typeof createHandler>): Promise<string> {
  const server: Server = createServer((req, res) => {
    void Promise.resolve(
      handler.run({ headers: req.headers, remoteAddress: req.socket.remoteAddress, method: req.method, url: req.url }),
    ).then((result) => {
      writeHeaders(result.headers, { get: (name) => res.getHeader(name)?.toString(), set: (name, value) => res.setHeader(name, value) });
      res.statusCode = result.status;
      res.end(result.allowed ? 'route' : result.body);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  open.push(() => new Promise((resolve) => server.close(() => resolve())));
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}/api/items`;
}

/** A GET from `localAddress`: its status and body. */
function get(url: string, localAddress: string): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const sent = request(url, { localAddress, agent: false }, (response) => {
      let body = '';
      response.setEncoding('utf8');
      response.on('data', (chunk: string) => (body += chunk));
      response.on('end', () => resolve({ status: response.statusCode ?? 0, body }));
    });
    sent.on('error', reject);
    sent.end();
  });
}

describe('the deny list over real HTTP: a change of some entries', () => {
  it('is enforced from the next request, and a removal frees the client on the next request', async () => {
    const limiter = memoryLimiter({ name: 'api', rules: fixedWindow({ limit: 1000, window: '1m' }) });
    // Longer than a list compiled at once: were the change compiled as a new list, it would apply parts later.
    const entries: DenyEntry[] = Array.from({ length: COMPILE_AT_ONCE * 4 }, (_, i) => ({ match: `user:${i}` }));
    limiter.configure({ deny: liveDenyList([...entries, { match: '127.0.0.4' }]) });
    const url = await serve(createHandler({ denyList: matchDenyList, limiter }));
    expect((await get(url, '127.0.0.2')).status).toBe(200);
    expect((await get(url, '127.0.0.4')).status).toBe(403);

    (limiter.denyLineage as LiveDenyLineage).change({ add: [{ match: '127.0.0.2', reason: 'scraper' }] });
    const refused = await get(url, '127.0.0.2');
    expect(refused.status).toBe(403);
    expect(JSON.parse(refused.body)).toMatchObject({ reason: 'denied', denyReason: 'scraper' });
    expect((await get(url, '127.0.0.3')).status).toBe(200);

    (limiter.denyLineage as LiveDenyLineage).change({ remove: ['127.0.0.2', '127.0.0.4'] });
    expect((await get(url, '127.0.0.2')).status).toBe(200);
    expect((await get(url, '127.0.0.4')).status).toBe(200);

    // A block: every client in it, from the next request.
    (limiter.denyLineage as LiveDenyLineage).change({ add: [{ match: '127.0.0.0/29' }] });
    expect((await get(url, '127.0.0.3')).status).toBe(403);
    expect((await get(url, '127.0.0.9')).status).toBe(200);
  });
});
