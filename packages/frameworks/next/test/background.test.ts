import { fixedWindow } from '@sluice/core';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { rateLimit } from '../src/index.js';
import { deferred, fakeClock, fetchEvent, memoryLimiter, nextRequest } from './support.js';

const VERCEL = { platform: 'vercel' } as const;
const limiterOf = (limit = 1) => memoryLimiter({ name: 'api', clock: fakeClock().read, rules: fixedWindow({ limit, window: '10s' }) });
const client = () => nextRequest({ 'x-real-ip': '203.0.113.7' });

afterEach(() => {
  vi.restoreAllMocks();
});

describe('background work goes to waitUntil and never delays the response', () => {
  it("hands onLimited's promise to the request's event.waitUntil and answers before it settles", async () => {
    const shipment = deferred();
    const limit = rateLimit({ limiter: limiterOf(), clientIp: VERCEL, onLimited: () => shipment.promise });
    const allowedEvent = fetchEvent();
    await limit(client(), allowedEvent);
    expect(allowedEvent.handed).toHaveLength(0); // nothing was limited, nothing to do

    const event = fetchEvent();
    const response = await limit(client(), event); // answered while the shipment is still pending
    expect(response.status).toBe(429);
    expect(event.handed).toHaveLength(1);
    let settled = false;
    void event.handed[0]!.then(() => (settled = true));
    await Promise.resolve();
    expect(settled).toBe(false);
    shipment.resolve();
    await event.handed[0];
    expect(settled).toBe(true);
  });

  it('onDecision runs for every decided request, allowed and refused, with the result', async () => {
    const seen: string[] = [];
    const limit = rateLimit({
      limiter: limiterOf(),
      clientIp: VERCEL,
      onDecision: async ({ request, result }) => void seen.push(`${request.nextUrl.pathname} ${result.outcome} ${result.identity}`),
    });
    const events = [fetchEvent(), fetchEvent()];
    await limit(client(), events[0]);
    await limit(client(), events[1]);
    await Promise.all(events.flatMap((e) => e.handed));
    expect(seen).toEqual(['/api/items allowed ip:203.0.113.7', '/api/items limited ip:203.0.113.7']);
    expect(events.map((e) => e.handed.length)).toEqual([1, 1]);
  });

  it('without an event, the promise goes to the waitUntil option (e.g. after from next/server)', async () => {
    const handed: Promise<unknown>[] = [];
    const limit = rateLimit({
      limiter: limiterOf(),
      clientIp: VERCEL,
      onDecision: () => Promise.resolve('logged'),
      waitUntil: (p) => void handed.push(p),
    });
    await limit.check(client());
    expect(handed).toHaveLength(1);
    // What is handed over never rejects: it is the settled work, not the hook's own promise.
    await expect(handed[0]).resolves.toBeUndefined();
  });

  it('a rejected background promise goes to onError as a hook failure, never unhandled', async () => {
    const errors: unknown[] = [];
    const limit = rateLimit({
      limiter: limiterOf(),
      clientIp: VERCEL,
      onLimited: () => Promise.reject(new Error('log shipper down')),
      onDecision: () => {
        throw new Error('analytics threw');
      },
      onError: (error, event) => void errors.push([(error as Error).message, event.source, event.request.nextUrl.pathname]),
    });
    const event = fetchEvent();
    expect((await limit(client(), fetchEvent())).status).toBe(200);
    expect((await limit(client(), event)).status).toBe(429);
    await Promise.all(event.handed);
    expect(errors).toEqual([
      ['analytics threw', 'hook', '/api/items'],
      ['log shipper down', 'hook', '/api/items'],
      ['analytics threw', 'hook', '/api/items'],
    ]);
  });

  it('failures of onError itself, or with no onError, become one console warning a minute', async () => {
    const warn = vi.spyOn(console, 'warn').mockImplementation(() => undefined);
    const limit = rateLimit({ limiter: limiterOf(100), clientIp: VERCEL, onDecision: () => Promise.reject(new Error('analytics down')) });
    const event = fetchEvent();
    for (let i = 0; i < 3; i++) await limit(client(), event);
    await Promise.all(event.handed);
    expect(warn).toHaveBeenCalledTimes(1);
    expect(warn.mock.calls[0]![0]).toBe('[sluice] @sluice/next: onDecision failed; pass onError to handle it: analytics down');
  });

  it('a waitUntil that throws (after() outside a request) does not fail the request', async () => {
    const warn = vi.spyOn(console, 'warn').mockImplementation(() => undefined);
    const limit = rateLimit({
      limiter: limiterOf(),
      clientIp: VERCEL,
      onDecision: () => Promise.resolve(),
      waitUntil: () => {
        throw new Error('`after` was called outside a request scope');
      },
    });
    expect((await limit(client())).status).toBe(200);
    expect(warn.mock.calls[0]![0]).toContain('waitUntil refused the background work of onDecision (it still runs, unprotected)');
  });
});
