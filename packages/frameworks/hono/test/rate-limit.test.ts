import { createLimiter, fixedWindow } from '@sluice/core';
import { memoryStore } from '@sluice/memory';
import { Hono } from 'hono';
import { describe, expect, it } from 'vitest';
import { rateLimit } from '../src/index.js';

function limiter(limit = 2) {
  return createLimiter({ name: 'api', store: memoryStore(), rules: fixedWindow({ limit, window: '1m' }) });
}

describe('rateLimit (app.request)', () => {
  it('lets requests through with RateLimit headers, then answers 429 problem+json', async () => {
    const app = new Hono();
    app.use(rateLimit({ limiter: limiter(2), clientIp: { platform: 'cloudflare' } }));
    app.get('/', (c) => c.json({ remaining: c.get('rateLimit').decision?.remaining }));
    const headers = { 'cf-connecting-ip': '203.0.113.7' };
    const first = await app.request('/', { headers });
    expect(first.status).toBe(200);
    expect(await first.json()).toEqual({ remaining: 1 });
    expect(first.headers.get('ratelimit')).toContain('r=1');
    await app.request('/', { headers });
    const third = await app.request('/', { headers });
    expect(third.status).toBe(429);
    expect(third.headers.get('content-type')).toContain('application/problem+json');
    expect(third.headers.get('retry-after')).toMatch(/^\d+$/);
    expect(JSON.parse(await third.text())).toMatchObject({ status: 429 });
  });
});
