import { createLimiter, fixedWindow, type Store } from '@sluice/core';
import { describe, expect, it } from 'vitest';
import {
  createHandler,
  matchDenyList,
  PLATFORM_HEADERS,
  type DeniedEvent,
  type DenyEntry,
  type ErrorEvent,
  type HandleResult,
  type HttpRequest,
} from '../src/index.js';
import { asyncMemoryStore, fakeClock, memoryLimiter, request, written } from './support.js';

function sync(result: HandleResult | Promise<HandleResult>): HandleResult {
  expect(result).not.toBeInstanceOf(Promise);
  return result as HandleResult;
}

function deniedLimiter(deny: readonly DenyEntry[], clock = fakeClock()) {
  const limiter = memoryLimiter({ name: 'api', rules: fixedWindow({ limit: 2, window: '10s' }), clock: clock.read });
  limiter.configure({ deny });
  return limiter;
}

describe('createHandler: the deny list', () => {
  it('answers a denied address with 403, reason denied, the entry reason, and no rate-limit fields', () => {
    const handler = createHandler({ denyList: matchDenyList, limiter: deniedLimiter([{ match: '203.0.113.0/24', reason: 'scraping' }]) });
    const refused = sync(handler.run(request('203.0.113.7')));
    expect(refused).toMatchObject({ allowed: false, outcome: 'denied', status: 403, identity: 'ip:203.0.113.7', results: [] });
    expect(written(refused.headers)).toEqual({ 'content-type': 'application/problem+json' });
    expect(JSON.parse(refused.body!)).toEqual({
      type: 'about:blank',
      title: 'Forbidden',
      status: 403,
      detail: 'This client is not allowed to make requests here: scraping.',
      reason: 'denied',
      denyReason: 'scraping',
    });
  });

  it('counts nothing for a denied client and limits others as before', () => {
    const limiter = deniedLimiter([{ match: '203.0.113.7' }]);
    const handler = createHandler({ denyList: matchDenyList, limiter });
    for (let i = 0; i < 5; i++) expect(sync(handler.run(request('203.0.113.7'))).status).toBe(403);
    expect(JSON.parse(sync(handler.run(request('203.0.113.7'))).body!)).not.toHaveProperty('denyReason');
    expect(sync(handler.run(request('203.0.113.8'))).outcome).toBe('allowed');
    expect(sync(handler.run(request('203.0.113.8'))).outcome).toBe('allowed');
    expect(sync(handler.run(request('203.0.113.8'))).outcome).toBe('limited');
    // Lifted, the denied client finds its whole quota: its denials took nothing.
    limiter.configure({ deny: [] });
    expect([1, 2, 3].map(() => sync(handler.run(request('203.0.113.7'))).outcome)).toEqual(['allowed', 'allowed', 'limited']);
  });

  it('answers a denied client from the list in memory: no store call, even on a store that answers asynchronously', async () => {
    let calls = 0;
    const inner = asyncMemoryStore();
    const store: Store = { ...inner, limit: (r) => (calls++, inner.limit(r)) };
    const limiter = createLimiter({ name: 'api', store, rules: fixedWindow({ limit: 2, window: '10s' }) });
    limiter.configure({ deny: [{ match: '203.0.113.0/24' }] });
    const handler = createHandler({ denyList: matchDenyList, limiter });
    for (let i = 0; i < 3; i++) expect(sync(handler.run(request(`203.0.113.${i}`))).status).toBe(403);
    expect(calls).toBe(0);
    // A client not on the list goes to the store: the double does see calls.
    const undenied = handler.run(request('198.51.100.1'));
    expect(undenied).toBeInstanceOf(Promise);
    expect((await undenied).outcome).toBe('allowed');
    expect(calls).toBe(1);
  });

  it('hands the 403 to refusalResponse as kind denied, which may change it', () => {
    const limiter = deniedLimiter([{ match: '203.0.113.7' }]);
    const handler = createHandler({
      limiter,
      denyList: matchDenyList,
      refusalResponse: (context) => (context.kind === 'denied' ? { status: 404, body: 'not found', contentType: 'text/plain' } : undefined),
    });
    const refused = sync(handler.run(request()));
    expect([refused.status, refused.outcome, refused.body]).toEqual([404, 'denied', 'not found']);
    expect(written(refused.headers)).toEqual({ 'content-type': 'text/plain' });
  });

  it('matches an authenticated identity, and the address of an authenticated client too', async () => {
    const limiter = deniedLimiter([{ match: 'user:42' }, { match: '2001:db8:aa00::/56' }]);
    const handler = createHandler<HttpRequest>({
      denyList: matchDenyList,
      limiter,
      identify: (r) => (r.url === '/as/42' ? 42 : r.url === '/as/7' ? 7 : undefined),
    });
    const as = (url: string, address: string) => handler.handle({ ...request(address), url });
    expect((await as('/as/42', '198.51.100.1')).status).toBe(403);
    expect((await as('/as/7', '198.51.100.1')).outcome).toBe('allowed');
    // A signed-in user on a denied network, with a fresh interface id: still denied.
    expect((await as('/as/7', '2001:db8:aa00:12:9999::1')).status).toBe(403);
    expect((await as('/', '2001:db8:aa01::1')).outcome).toBe('allowed');
  });

  it('reads the address with the trust rules of limiting: spoofed headers cannot move a denied client', () => {
    const handler = createHandler({ denyList: matchDenyList, limiter: deniedLimiter([{ match: '203.0.113.7' }]) });
    // Every header a platform preset or the chain reader knows, and common ones none reads, each naming another address.
    const names = [...Object.values(PLATFORM_HEADERS).flat(), 'x-forwarded-for', 'true-client-ip', 'x-client-ip'];
    const spoofs = { ...Object.fromEntries(names.map((name) => [name, '198.51.100.9'])), forwarded: 'for=198.51.100.9' };
    expect(sync(handler.run(request('203.0.113.7', spoofs))).status).toBe(403);
    // Behind one trusted proxy the header is the client: the denied client is read from it, not from the proxy.
    const proxied = createHandler({
      denyList: matchDenyList,
      limiter: deniedLimiter([{ match: '203.0.113.7' }]),
      clientIp: { trustProxy: 1 },
    });
    expect(sync(proxied.run(request('10.0.0.1', { 'x-forwarded-for': '198.51.100.9, 203.0.113.7' }))).status).toBe(403);
    expect(sync(proxied.run(request('10.0.0.1', { 'x-forwarded-for': '203.0.113.7, 198.51.100.9' }))).status).toBe(200);
  });

  it('stops denying when the entry expires on the limiter clock', () => {
    const clock = fakeClock();
    const handler = createHandler({
      denyList: matchDenyList,
      limiter: deniedLimiter([{ match: '203.0.113.7', until: clock.now + 60_000 }], clock),
    });
    expect(sync(handler.run(request())).status).toBe(403);
    clock.now += 59_999;
    expect(sync(handler.run(request())).status).toBe(403);
    clock.now += 1;
    expect(sync(handler.run(request())).outcome).toBe('allowed');
  });

  it('follows a replaced list, and a list emptied again', () => {
    const limiter = deniedLimiter([]);
    const handler = createHandler({ denyList: matchDenyList, limiter });
    expect(sync(handler.run(request())).outcome).toBe('allowed');
    limiter.configure({ deny: [{ match: 'ip:203.0.113.7' }] });
    expect(sync(handler.run(request())).status).toBe(403);
    limiter.configure({ deny: [] });
    expect(sync(handler.run(request())).outcome).toBe('allowed');
  });

  it("keeps refusing a listed client when the limiter's mode is off (the kill switch) or shadow: the list has its own mode", () => {
    const events: DeniedEvent<HttpRequest>[] = [];
    const limiter = deniedLimiter([{ match: '203.0.113.0/24', reason: 'scraper' }]);
    const handler = createHandler({ denyList: matchDenyList, limiter, onDenied: (e) => events.push(e) });
    for (const mode of ['off', 'shadow', 'enforce'] as const) {
      limiter.configure({ mode });
      expect(sync(handler.run(request('203.0.113.7'))).status, `limiter mode ${mode}`).toBe(403);
    }
    expect(events.map((e) => e.shadow)).toEqual([false, false, false]);
    // The kill switch still lifts the limits for everyone else: far past the limit of 2, nothing is refused.
    limiter.configure({ mode: 'off' });
    expect([1, 2, 3, 4].map(() => sync(handler.run(request('198.51.100.1'))).outcome)).toEqual([
      'allowed',
      'allowed',
      'allowed',
      'allowed',
    ]);
  });

  it('with the deny mode shadow serves a listed client and reports it to onDenied; off serves it unreported', () => {
    const events: DeniedEvent<HttpRequest>[] = [];
    const limiter = deniedLimiter([{ match: '203.0.113.0/24', reason: 'test' }]);
    expect(limiter.denyMode).toBe('enforce');
    limiter.configure({ denyMode: 'shadow' });
    const handler = createHandler({ denyList: matchDenyList, limiter, onDenied: (e) => events.push(e) });
    expect(sync(handler.run(request())).allowed).toBe(true);
    expect(events).toMatchObject([
      { identity: 'ip:203.0.113.7', address: '203.0.113.7', limiterName: 'api', shadow: true, entry: { reason: 'test' } },
    ]);
    limiter.configure({ denyMode: 'enforce' });
    expect(sync(handler.run(request())).status).toBe(403);
    expect(events[1]).toMatchObject({ shadow: false });
    limiter.configure({ denyMode: 'off' });
    expect(sync(handler.run(request())).allowed).toBe(true);
    expect(events).toHaveLength(2);
    // The deny mode leaves the limits alone: the client is counted like any other (limit 2, two served already).
    expect(sync(handler.run(request())).outcome).toBe('limited');
    // The handler's own shadow option lets denied clients through as well.
    limiter.configure({ denyMode: 'enforce' });
    const shadowed = createHandler({ denyList: matchDenyList, limiter, shadow: true, onDenied: (e) => events.push(e) });
    expect(shadowed.run(request())).toMatchObject({ allowed: true });
    expect(events[2]).toMatchObject({ shadow: true });
  });

  it('refuses a deny mode other than enforce, shadow or off, naming the field, and changes nothing', () => {
    const limiter = deniedLimiter([{ match: '203.0.113.7' }]);
    expect(() => limiter.configure({ deny: [], denyMode: 'dry-run' as never })).toThrow(
      /configure: denyMode must be 'enforce', 'shadow' or 'off', got "dry-run"/,
    );
    expect([limiter.deny.length, limiter.denyMode]).toEqual([1, 'enforce']);
  });

  it('reports malformed entries once per list to onError and applies the others', () => {
    const errors: [unknown, ErrorEvent<HttpRequest>][] = [];
    const limiter = deniedLimiter([{ match: '10.0.0.0/40' }, { match: '203.0.113.7' }]);
    const handler = createHandler({ denyList: matchDenyList, limiter, onError: (error, event) => errors.push([error, event]) });
    for (let i = 0; i < 3; i++) expect(sync(handler.run(request())).status).toBe(403);
    expect(errors).toHaveLength(1);
    expect(errors[0]![1]).toMatchObject({ source: 'deny-list', limiterName: 'api' });
    expect(String((errors[0]![0] as Error).message)).toContain('deny[0]: "10.0.0.0/40"');
  });

  it('without denyList, a limiter that holds a list is not enforced and is reported once per list', () => {
    const errors: [unknown, ErrorEvent<HttpRequest>][] = [];
    const limiter = deniedLimiter([{ match: '203.0.113.7' }]);
    const handler = createHandler({ limiter, onError: (error, event) => errors.push([error, event]) });
    expect(sync(handler.run(request())).status).toBe(200);
    expect(sync(handler.run(request())).status).toBe(200);
    expect(errors).toHaveLength(1);
    expect(errors[0]![1]).toMatchObject({ source: 'deny-list', limiterName: 'api' });
    expect(String((errors[0]![0] as Error).message)).toContain('denyList: matchDenyList');
    limiter.configure({ deny: [{ match: '203.0.113.8' }] });
    expect(sync(handler.run(request())).status).toBe(429);
    expect(errors).toHaveLength(2);
    // A list switched off on purpose (its deny mode) is not reported as unenforced.
    limiter.configure({ deny: [{ match: '203.0.113.9' }], denyMode: 'off' });
    sync(handler.run(request()));
    expect(errors).toHaveLength(2);
  });

  it('refuses a denyList that is not the deny list step, naming the option', () => {
    expect(() => createHandler({ limiter: deniedLimiter([]), denyList: true as never })).toThrow(/denyList must be matchDenyList/);
  });
});
