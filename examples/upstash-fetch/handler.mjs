// A serverless-style handler: one web-standard `fetch(request)` function, as Vercel, Cloudflare Workers, Deno
// Deploy and Bun export it. The limiter and the Upstash client live at module scope, so warm invocations reuse
// them. Credentials come from the environment, as on any serverless platform.
import { createLimiter, fixedWindow, tokenBucket } from '@sluice/core';
import { upstashStore } from '@sluice/upstash';
import { Redis } from '@upstash/redis';

const limiter = createLimiter({
  store: upstashStore(Redis.fromEnv({ enableTelemetry: false })),
  name: 'api',
  // Compound: bursts of 5 refilled at 1 per second, and at most 8 per minute. One HTTP request decides both.
  rules: [tokenBucket({ capacity: 5, refillRate: 1, interval: '1s', id: 'burst' }), fixedWindow({ limit: 8, window: '1m', id: 'minute' })],
  timeout: '1s',
});

export default {
  async fetch(request) {
    const client = request.headers.get('x-client-id') ?? request.headers.get('x-forwarded-for') ?? 'anonymous';
    const decision = await limiter.limit(client);
    const headers = {
      'content-type': 'application/json',
      'ratelimit-limit': String(decision.limit),
      'ratelimit-remaining': String(decision.remaining),
      'ratelimit-reset': String(Math.max(0, Math.ceil((decision.resetAt - decision.now) / 1000))),
    };
    if (decision.degraded) headers['x-ratelimit-degraded'] = decision.reason;
    if (!decision.allowed) {
      const retryAfter = Number.isFinite(decision.retryAfter) ? String(Math.ceil(decision.retryAfter / 1000)) : undefined;
      return new Response(JSON.stringify({ error: 'too many requests', rule: decision.rule }), {
        status: 429,
        headers: retryAfter === undefined ? headers : { ...headers, 'retry-after': retryAfter },
      });
    }
    return new Response(JSON.stringify({ ok: true, client, rule: decision.rule, remaining: decision.remaining }), { headers });
  },
};
