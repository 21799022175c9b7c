// End to end: the deny list on a real server per framework (Express 5, Express 4, Fastify 5, Hono 4) on 127.0.0.1,
// a real HTTP client connecting from chosen loopback addresses. A denied address gets 403 with reason 'denied' and
// no rate-limit fields, whatever forwarding headers it sends; others are limited as before; the limiter's kill
// switch and shadow mode leave the list applying; the list's own shadow mode (denyMode) reports and lets through.
import { createLimiter, fixedWindow, type Limiter } from '@sluice/core';
import { matchDenyList, type DeniedEvent, type DenyEntry } from '@sluice/http';
import { memoryStore } from '@sluice/memory';
import * as express from '@sluice/express';
import * as fastify from '@sluice/fastify';
import * as hono from '@sluice/hono';
import * as next from '@sluice/next';
import { describe, expect, it } from 'vitest';
import { client, closedAfterEach, FRAMEWORKS, limitHeaders, serve, spoofingHeaders } from './servers.js';

const track = closedAfterEach();

function deniedLimiter(deny: readonly DenyEntry[]): Limiter {
  const limiter = createLimiter({ name: 'api', store: memoryStore(), rules: fixedWindow({ limit: 2, window: '1m' }) });
  limiter.configure({ deny });
  return limiter;
}

const SPOOFS = spoofingHeaders('198.51.100.9');

it('every adapter exports the deny list step of @sluice/http, so one import serves the option', () => {
  for (const adapter of [express, fastify, hono, next]) expect(adapter.matchDenyList).toBe(matchDenyList);
});

for (const framework of FRAMEWORKS) {
  describe(`${framework}: deny list`, () => {
    it('answers a denied address 403 with reason denied, and limits an undenied one as before', async () => {
      const limiter = deniedLimiter([{ match: '127.0.0.2', reason: 'abuse report' }]);
      const app = await track(serve(framework, { limiter, denyList: matchDenyList }, [{ path: '/' }]));
      const denied = await track(client('127.0.0.2'));
      const other = await track(client('127.0.0.3'));
      for (let i = 0; i < 3; i++) {
        const refused = await denied.get(app.url);
        expect(refused.status).toBe(403);
        expect(limitHeaders(refused)).toEqual({});
        expect(refused.headers['content-type']).toMatch(/^application\/problem\+json/);
        expect(JSON.parse(refused.body)).toMatchObject({ status: 403, reason: 'denied', denyReason: 'abuse report' });
      }
      expect(app.ran('/')).toBe(0);
      const statuses = [];
      for (let i = 0; i < 3; i++) statuses.push((await other.get(app.url)).status);
      expect(statuses).toEqual([200, 200, 429]);
    });

    it('still refuses a denied client that sends every forwarding header under the default trust', async () => {
      const limiter = deniedLimiter([{ match: '127.0.0.0/29' }]);
      const app = await track(serve(framework, { limiter, denyList: matchDenyList }, [{ path: '/' }]));
      const denied = await track(client('127.0.0.4'));
      expect((await denied.get(app.url, SPOOFS)).status).toBe(403);
      for (const [name, value] of Object.entries(SPOOFS)) {
        expect((await denied.get(app.url, { [name]: value })).status, name).toBe(403);
      }
      expect(app.ran('/')).toBe(0);
    });

    it("still refuses a denied client with the limiter's mode off (the kill switch) or shadow", async () => {
      const limiter = deniedLimiter([{ match: '127.0.0.6', reason: 'abuse report' }]);
      const app = await track(serve(framework, { limiter, denyList: matchDenyList }, [{ path: '/' }]));
      const denied = await track(client('127.0.0.6'));
      for (const mode of ['off', 'shadow'] as const) {
        limiter.configure({ mode });
        expect((await denied.get(app.url)).status, `limiter mode ${mode}`).toBe(403);
      }
      expect(app.ran('/')).toBe(0);
    });

    it("the deny list's shadow mode reports the would-be denial and lets the request through", async () => {
      const events: DeniedEvent<unknown>[] = [];
      const limiter = deniedLimiter([{ match: '127.0.0.5', reason: 'trial' }]);
      limiter.configure({ denyMode: 'shadow' });
      const onDenied = (event: DeniedEvent<never>) => void events.push(event);
      const app = await track(serve(framework, { limiter, denyList: matchDenyList, onDenied }, [{ path: '/' }]));
      const denied = await track(client('127.0.0.5'));
      const reply = await denied.get(app.url);
      expect(reply.status).toBe(200);
      expect(app.ran('/')).toBe(1);
      expect(events).toHaveLength(1);
      expect(events[0]).toMatchObject({
        identity: 'ip:127.0.0.5',
        address: '127.0.0.5',
        limiterName: 'api',
        shadow: true,
        entry: { reason: 'trial' },
      });
    });
  });
}
