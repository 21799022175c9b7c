/**
 * withTrafficStack around a route handler: the order of the article 'Scaling your API with rate limiters', 429/503
 * problem bodies naming the layer, and leases held until the response body is read to its end, cancelled (a client
 * that went away) or the handler threw.
 */
import { fixedWindow } from '@sluice/core';
import { createConcurrencyLimiter } from '@sluice/core/concurrency';
import { createFleetShedder } from '@sluice/core/shedding';
import { memoryStore } from '@sluice/memory';
import { describe, expect, it } from 'vitest';
import { rateLimit, withTrafficStack } from '../src/index.js';
import { memoryLimiter, nextRequest } from './support.js';

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

  it('rate first: a refused request takes no lease, and an allowed one carries the RateLimit headers', async () => {
    const store = memoryStore();
    const inFlight = createConcurrencyLimiter({ store, limit: 5 });
    const rate = rateLimit({
      limiter: memoryLimiter({ rules: fixedWindow({ limit: 1, window: '1m' }), name: 'rate' }),
      identify: (request) => client(request),
    });
    const handler = withTrafficStack(async () => new Response(null, { status: 204 }), { rate, concurrency: { limiter: inFlight } });
    const allowed = await handler(nextRequest({ 'x-client': 'alice' }), {});
    expect(allowed.status).toBe(204);
    expect(allowed.headers.get('ratelimit')).not.toBeNull();
    const refused = await handler(nextRequest({ 'x-client': 'alice' }), {});
    expect(refused.status).toBe(429);
    expect(await refused.json()).toMatchObject({ 'violated-policies': ['rate'] });
    expect((await inFlight.acquire('alice')).held).toBe(1); // nothing was left held by either request
  });

  it('fleet: non-critical work gets 503 past its share, critical passes', async () => {
    const fleet = createFleetShedder({ store: memoryStore(), capacity: 2, reserve: 0.5, classes: ['critical', 'normal'] });
    const handler = withTrafficStack(async () => new Response('ok'), {
      fleet,
      priority: (request) => (request.headers.get('x-critical') === '1' ? 'critical' : 'normal'),
    });
    const held = await handler(nextRequest(), {});
    expect(held.status).toBe(200);
    const shed = await handler(nextRequest(), {});
    expect(shed.status).toBe(503);
    expect(await shed.json()).toMatchObject({ refusedBy: 'fleet', status: 503 });
    expect((await handler(nextRequest({ 'x-critical': '1' }), {})).status).toBe(200);
    await held.text();
  });

  it('refuses bad options clearly', () => {
    const fleet = createFleetShedder({ store: memoryStore(), capacity: 2 });
    expect(() => withTrafficStack(async () => new Response(), { fleet })).toThrow(/priority must be a function/);
    expect(() =>
      withTrafficStack(async () => new Response(), {
        concurrency: { limiter: createConcurrencyLimiter({ store: memoryStore(), limit: 1 }) },
      }),
    ).toThrow(/concurrency needs identify/);
  });
});
