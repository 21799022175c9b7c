/**
 * The Upstash store through the real @upstash/redis client, over HTTP, against the fixture on a real Redis.
 * The fixture counts what reaches it, so "one request per decision" is measured, not assumed.
 */
import { createLimiter, fixedWindow, gcra, slidingWindowLog, tokenBucket, type Rule } from '@sluice/core';
import { beforeEach, describe, expect, it } from 'vitest';
import { upstashStore } from '../src/index.js';
import { client, control, identity } from './helpers.js';

beforeEach(() => control.reset());

const configurations = {
  'default client (auto-pipelining, base64)': {},
  'no auto-pipelining': { enableAutoPipelining: false },
  'no base64, no deserialization': { responseEncoding: false as const, automaticDeserialization: false },
};

describe.each(Object.entries(configurations))('with %s', (_name, options) => {
  it('admits the limit, then denies, with exactly one HTTP request per decision', async () => {
    const limiter = createLimiter({ store: upstashStore(client(options)), rules: fixedWindow({ limit: 3, window: '1m' }) });
    const who = identity('basic');
    const decisions = [];
    for (let i = 0; i < 5; i++) decisions.push(await limiter.limit(who));
    expect(decisions.map((d) => d.allowed)).toEqual([true, true, true, false, false]);
    expect(decisions.map((d) => d.remaining)).toEqual([2, 1, 0, 0, 0]);
    expect(decisions[3]).toMatchObject({ reason: 'rate_limited', degraded: false, limit: 3 });
    expect(decisions[3]!.retryAfter).toBeGreaterThan(0);
    const stats = await control.stats();
    // The first decision on a fresh script cache costs EVALSHA (NOSCRIPT) + EVAL; every later one exactly one.
    const noscript = stats.byCommand.eval ?? 0;
    expect(noscript).toBeLessThanOrEqual(1);
    expect(stats.requests).toBe(5 + noscript);
    expect(stats.byCommand.evalsha).toBe(5);
  });
});

describe('compound rules', () => {
  it('are all-or-nothing in one request: a denial by one rule consumes nothing from the other', async () => {
    const rules: Rule[] = [
      fixedWindow({ limit: 10, window: '1m', id: 'minute' }),
      tokenBucket({ capacity: 2, refillRate: 1, interval: '1h', id: 'burst' }),
    ];
    const limiter = createLimiter({ store: upstashStore(client()), rules });
    const who = identity('compound');
    await limiter.limit(who); // warm the script cache so the count below is exact
    await control.reset();
    const second = await limiter.limit(who);
    const third = await limiter.limit(who);
    expect(second.allowed).toBe(true);
    expect(third).toMatchObject({ allowed: false, rule: 'burst' });
    // The minute window kept 8, not 7: the denied request took nothing from it.
    expect(third.rules.find((r) => r.id === 'minute')!.remaining).toBe(8);
    const peek = await limiter.peek(who);
    expect(peek.rules.find((r) => r.id === 'minute')!.remaining).toBe(8);
    expect((await control.stats()).requests).toBe(3);
  });

  it('runs every algorithm through the same script', async () => {
    const rules: Rule[] = [
      gcra({ limit: 5, period: '1m', id: 'g' }),
      slidingWindowLog({ limit: 5, window: '1m', id: 'log' }),
      fixedWindow({ limit: 5, window: '1m', id: 'fw' }),
    ];
    const limiter = createLimiter({ store: upstashStore(client()), rules });
    const who = identity('all');
    const allowed = [];
    for (let i = 0; i < 7; i++) allowed.push((await limiter.limit(who)).allowed);
    expect(allowed).toEqual([true, true, true, true, true, false, false]);
  });
});

describe.each([
  ['one command per request', false],
  ['auto-pipelined', true],
])('scripts (%s)', (_name, enableAutoPipelining) => {
  it('falls back from NOSCRIPT to EVAL once for a batch, counting each decision once', async () => {
    const redis = client({ enableAutoPipelining });
    const limiter = createLimiter({ store: upstashStore(redis), rules: fixedWindow({ limit: 10, window: '1m' }) });
    const who = identity('noscript-batch');
    expect((await limiter.limit(who)).remaining).toBe(9);
    await redis.scriptFlush();
    await control.reset();
    const decisions = await Promise.all(Array.from({ length: 4 }, () => limiter.limit(who)));
    expect(decisions.map((d) => d.remaining)).toEqual([8, 7, 6, 5]);
    expect(await control.stats()).toMatchObject({ requests: 2, byCommand: { evalsha: 1, eval: 1 } });
  });

  it('falls back from NOSCRIPT to EVAL exactly once and counts the decision once', async () => {
    const redis = client({ enableAutoPipelining });
    const limiter = createLimiter({ store: upstashStore(redis), rules: fixedWindow({ limit: 10, window: '1m' }) });
    const who = identity('noscript');
    expect((await limiter.limit(who)).remaining).toBe(9);
    await redis.scriptFlush();
    await control.reset();
    const after = await limiter.limit(who);
    expect(after.remaining).toBe(8); // consumed once, not twice
    expect(await control.stats()).toMatchObject({ requests: 2, byCommand: { evalsha: 1, eval: 1 } });
    await limiter.limit(who);
    expect(await control.stats()).toMatchObject({ requests: 3, byCommand: { evalsha: 2, eval: 1 } });
  });
});

describe('clocks', () => {
  it("uses the store's clock (Redis TIME) by default, whatever the limiter's clock says", async () => {
    const store = upstashStore(client());
    expect(store.capabilities.clock).toBe('store');
    const limiter = createLimiter({ store, rules: fixedWindow({ limit: 1, window: '1m' }), clock: () => 1_000 });
    const decision = await limiter.limit(identity('store-clock'));
    expect(Math.abs(decision.now - Date.now())).toBeLessThan(60_000);
  });

  it("uses the limiter's clock with clock: 'client', so a fake clock drives windows", async () => {
    let now = 1_700_000_000_000;
    const limiter = createLimiter({
      store: upstashStore(client(), { clock: 'client' }),
      rules: fixedWindow({ limit: 2, window: '1s' }),
      clock: () => now,
    });
    const who = identity('client-clock');
    expect((await limiter.limit(who)).now).toBe(now);
    await limiter.limit(who);
    expect((await limiter.limit(who)).allowed).toBe(false);
    now += 1_000;
    expect((await limiter.limit(who)).allowed).toBe(true);
  });
});

describe('concurrency and reset', () => {
  it('admits exactly the limit out of concurrent decisions, which share one script call (one request, one EVALSHA)', async () => {
    const limiter = createLimiter({ store: upstashStore(client()), rules: fixedWindow({ limit: 10, window: '1m' }) });
    const who = identity('burst');
    await limiter.peek(who);
    await control.reset();
    const decisions = await Promise.all(Array.from({ length: 25 }, () => limiter.limit(who)));
    expect(decisions.map((d) => d.allowed)).toEqual([...Array(10).fill(true), ...Array(15).fill(false)]); // in issue order
    expect(await control.stats()).toMatchObject({ requests: 1, redisCommands: 1, byCommand: { evalsha: 1 } });
  });

  // Both modes assert the exact transport, not just a bound that 25 requests would also meet.
  it.each([
    ['auto-pipelining on: one pipeline request carries all 25', true, { requests: 1, pipeline: 1, command: 0 }],
    ['auto-pipelining off: one request each', false, { requests: 25, pipeline: 0, command: 25 }],
  ])('batch: false runs one script per decision (%s), still exact', async (_name, enableAutoPipelining, transport) => {
    const limiter = createLimiter({
      store: upstashStore(client({ enableAutoPipelining }), { batch: false }),
      rules: fixedWindow({ limit: 10, window: '1m' }),
    });
    const who = identity('unbatched');
    await limiter.peek(who);
    await control.reset();
    const decisions = await Promise.all(Array.from({ length: 25 }, () => limiter.limit(who)));
    expect(decisions.filter((d) => d.allowed)).toHaveLength(10);
    // One script run per decision; the 25 were issued in one tick, so auto-pipelining sends them in one request.
    expect(await control.stats()).toMatchObject({ ...transport, redisCommands: 25, byCommand: { evalsha: 25 } });
  });

  it('maxBatch bounds the decisions of one call', async () => {
    const limiter = createLimiter({
      store: upstashStore(client({ enableAutoPipelining: false }), { maxBatch: 4 }),
      rules: fixedWindow({ limit: 100, window: '1m' }),
    });
    const who = identity('max');
    await limiter.peek(who);
    await control.reset();
    const decisions = await Promise.all(Array.from({ length: 10 }, () => limiter.limit(who)));
    expect(decisions.map((d) => d.remaining)).toEqual([99, 98, 97, 96, 95, 94, 93, 92, 91, 90]);
    expect(await control.stats()).toMatchObject({ requests: 3, byCommand: { evalsha: 3 } });
  });

  it('reset forgets the identity in one request', async () => {
    const limiter = createLimiter({
      store: upstashStore(client()),
      rules: [fixedWindow({ limit: 1, window: '1m', id: 'a' }), gcra({ limit: 1, period: '1m', id: 'b' })],
    });
    const who = identity('reset');
    await limiter.limit(who);
    expect((await limiter.limit(who)).allowed).toBe(false);
    await control.reset();
    await limiter.reset(who);
    expect(await control.stats()).toMatchObject({ requests: 1, byCommand: { del: 1 } });
    expect((await limiter.limit(who)).allowed).toBe(true);
  });

  it('refund gives capacity back', async () => {
    const limiter = createLimiter({ store: upstashStore(client()), rules: fixedWindow({ limit: 2, window: '1m' }) });
    const who = identity('refund');
    await limiter.limit(who, { cost: 2 });
    expect((await limiter.limit(who)).allowed).toBe(false);
    await limiter.refund(who);
    expect((await limiter.limit(who)).allowed).toBe(true);
  });
});
