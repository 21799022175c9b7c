// Attack suites against real servers: a client that rotates X-Forwarded-For (or IPv6 addresses inside its /64)
// to get a fresh bucket on every request must stay in one bucket, for every framework adapter.
import { createLimiter, fixedWindow, type Limiter } from '@sluice/core';
import type { ClientIpOptions } from '@sluice/http';
import { memoryStore } from '@sluice/memory';
import { afterEach, describe, expect, it } from 'vitest';
import { client, FRAMEWORKS, reverseProxy, sendAndReset, serve, type Reply } from './servers.js';

const LIMIT = 5;
const ATTEMPTS = 20;
const open: Array<{ close(): Promise<void> }> = [];
afterEach(async () => {
  await Promise.all(open.splice(0).map((item) => item.close()));
});

async function track<T extends { close(): Promise<void> }>(item: T | Promise<T>): Promise<T> {
  const ready = await item;
  open.push(ready);
  return ready;
}

function limiter(): Limiter {
  return createLimiter({ name: 'api', store: memoryStore(), rules: fixedWindow({ limit: LIMIT, window: '1m' }) });
}

function randomIpv4(): string {
  return Array.from({ length: 4 }, () => Math.floor(Math.random() * 256)).join('.');
}

function tally(replies: readonly Reply[]) {
  return {
    allowed: replies.filter((r) => r.status === 200).length,
    refused: replies.filter((r) => r.status === 429).length,
    identities: [...new Set(replies.filter((r) => r.status === 200).map((r) => JSON.parse(r.body).identity as string))],
  };
}

for (const framework of FRAMEWORKS) {
  describe(`${framework}: rotating X-Forwarded-For`, () => {
    it('under the default config the header is ignored: one bucket, the socket address', async () => {
      const app = await track(serve(framework, { limiter: limiter() }, [{ path: '/' }]));
      const attacker = await track(client());
      const replies: Reply[] = [];
      for (let i = 0; i < ATTEMPTS; i++) {
        replies.push(
          await attacker.get(app.url, {
            'x-forwarded-for': `${randomIpv4()}, ${randomIpv4()}`,
            forwarded: `for=${randomIpv4()}`,
            'x-real-ip': randomIpv4(),
          }),
        );
      }
      expect(tally(replies)).toEqual({ allowed: LIMIT, refused: ATTEMPTS - LIMIT, identities: ['ip:127.0.0.1'] });
    });

    for (const trustProxy of [['127.0.0.1'], 1] as const) {
      it(`behind one declared proxy (trustProxy: ${JSON.stringify(trustProxy)}), the address the proxy appended decides`, async () => {
        const clientIp: ClientIpOptions = { trustProxy: trustProxy as ClientIpOptions['trustProxy'] };
        const app = await track(serve(framework, { limiter: limiter(), clientIp }, [{ path: '/' }]));
        const proxy = await track(reverseProxy(app));
        const attacker = await track(client('127.0.0.2'));
        const bystander = await track(client('127.0.0.3'));
        const replies: Reply[] = [];
        for (let i = 0; i < ATTEMPTS; i++) replies.push(await attacker.get(proxy.url, { 'x-forwarded-for': randomIpv4() }));
        expect(tally(replies)).toEqual({ allowed: LIMIT, refused: ATTEMPTS - LIMIT, identities: ['ip:127.0.0.2'] });
        // Another client behind the same proxy has its own bucket: the proxy's address is not the key.
        const other = await bystander.get(proxy.url, { 'x-forwarded-for': '127.0.0.2' });
        expect(other.status).toBe(200);
        expect(JSON.parse(other.body).identity).toBe('ip:127.0.0.3');
      });
    }

    it('bypassing the declared proxy does not help: the socket is not trusted, so the header is ignored', async () => {
      const app = await track(serve(framework, { limiter: limiter(), clientIp: { trustProxy: ['127.0.0.1'] } }, [{ path: '/' }]));
      const attacker = await track(client('127.0.0.2'));
      const replies: Reply[] = [];
      for (let i = 0; i < ATTEMPTS; i++) replies.push(await attacker.get(app.url, { 'x-forwarded-for': randomIpv4() }));
      expect(tally(replies)).toEqual({ allowed: LIMIT, refused: ATTEMPTS - LIMIT, identities: ['ip:127.0.0.2'] });
    });
  });

  describe(`${framework}: rotating IPv6 addresses`, () => {
    it('a client cycling through its /64 (server on ::1, addresses forwarded by a declared proxy) stays in one /56 bucket', async () => {
      // The connection from ::1 plays the trusted proxy; the rightmost X-Forwarded-For entry is the client it saw.
      const app = await track(serve(framework, { limiter: limiter(), clientIp: { trustProxy: ['::1'] } }, [{ path: '/' }], '::1'));
      const proxy = await track(client());
      const hex = () => Math.floor(Math.random() * 0x10000).toString(16);
      const replies: Reply[] = [];
      for (let i = 0; i < ATTEMPTS; i++) {
        const rotated = `2001:db8:abcd:12:${hex()}:${hex()}:${hex()}:${hex()}`;
        const written = i % 2 === 0 ? rotated : `[${rotated}]:${1024 + i}`;
        replies.push(await proxy.get(app.url, { 'x-forwarded-for': `${randomIpv4()}, ${written}` }));
      }
      expect(tally(replies)).toEqual({ allowed: LIMIT, refused: ATTEMPTS - LIMIT, identities: ['ip:2001:db8:abcd::/56'] });
      // A subscriber in the next /56 is someone else.
      const neighbour = await proxy.get(app.url, { 'x-forwarded-for': '2001:db8:abcd:100::1' });
      expect(neighbour.status).toBe(200);
      expect(JSON.parse(neighbour.body).identity).toBe('ip:2001:db8:abcd:100::/56');
    });
  });

  describe(`${framework}: a malformed Forwarded element prepended by the client`, () => {
    const MALFORMED = ['for=x y', 'for="6.6.6.6', 'for=6.6.6.6;for=7.7.7.7', 'for=[2001:db8::6]', 'for='];
    const clientIp: ClientIpOptions = { trustProxy: ['127.0.0.1'], header: 'forwarded' };

    it("under 'skip', the client is still limited by the address the proxy appended", async () => {
      const app = await track(serve(framework, { limiter: limiter(), clientIp, onMissingIdentity: 'skip' }, [{ path: '/' }]));
      const proxy = await track(reverseProxy(app, 'forwarded'));
      const attacker = await track(client('127.0.0.2'));
      const replies: Reply[] = [];
      for (let i = 0; i < ATTEMPTS; i++) replies.push(await attacker.get(proxy.url, { forwarded: MALFORMED[i % MALFORMED.length]! }));
      expect(tally(replies)).toEqual({ allowed: LIMIT, refused: ATTEMPTS - LIMIT, identities: ['ip:127.0.0.2'] });
    });

    it('under { bucket }, the client cannot drain the shared bucket of the truly unidentified', async () => {
      const app = await track(
        serve(framework, { limiter: limiter(), clientIp, onMissingIdentity: { bucket: 'anonymous' } }, [{ path: '/' }]),
      );
      const proxy = await track(reverseProxy(app, 'forwarded'));
      const attacker = await track(client('127.0.0.2'));
      const replies: Reply[] = [];
      for (let i = 0; i < ATTEMPTS; i++) replies.push(await attacker.get(proxy.url, { forwarded: MALFORMED[i % MALFORMED.length]! }));
      expect(tally(replies)).toEqual({ allowed: LIMIT, refused: ATTEMPTS - LIMIT, identities: ['ip:127.0.0.2'] });
      // A trusted proxy (a direct connection from 127.0.0.1) forwarding a client it could not name: the bucket is whole.
      const proxied = await track(client());
      const unknown: Reply[] = [];
      for (let i = 0; i < LIMIT; i++) unknown.push(await proxied.get(app.url, { forwarded: 'for=unknown' }));
      expect(tally(unknown)).toEqual({ allowed: LIMIT, refused: 0, identities: ['bucket:anonymous'] });
    });
  });

  describe(`${framework}: a client that resets its connection`, () => {
    it("under 'skip', requests on connections reset at once do not run the route unlimited (limit 5)", async () => {
      const app = await track(serve(framework, { limiter: limiter(), onMissingIdentity: 'skip' }, [{ path: '/' }, { path: '/probe' }]));
      // 40 connections from 127.0.0.2, each with 10 pipelined requests and a TCP RST right after them.
      for (let i = 0; i < 40; i++) await sendAndReset(app.port, '/', 10, '127.0.0.2');
      // A request on an ordinary connection, answered after the server has read everything the attacker sent.
      const probe = await track(client());
      expect((await probe.get(`${app.url}/probe`)).status).toBe(200);
      await new Promise((resolve) => setImmediate(resolve));
      expect(app.ran('/')).toBeLessThanOrEqual(LIMIT);
    });
  });

  describe(`${framework}: shadow-banned responses`, () => {
    it('carry the same header names as allowed ones', async () => {
      const app = await track(serve(framework, { limiter: limiter(), shadowBan: true }, [{ path: '/' }]));
      const user = await track(client());
      const replies: Reply[] = [];
      for (let i = 0; i <= LIMIT; i++) replies.push(await user.get(app.url));
      const allowed = replies[0]!;
      const banned = replies[LIMIT]!;
      expect([allowed.status, banned.status, banned.body]).toEqual([200, 200, '{}']);
      expect(allowed.headers.ratelimit).toMatch(/^"api";r=4;t=\d+$/);
      // Express's res.json adds an ETag of the route's own body; the ban's body is the middleware's.
      const names = (reply: Reply) =>
        Object.keys(reply.headers)
          .filter((name) => name !== 'etag')
          .sort();
      expect(names(banned)).toEqual(names(allowed));
    });
  });
}
