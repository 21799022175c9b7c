// The Worker you would deploy (`wrangler deploy`, wrangler.toml beside this file): Hono, with @sluice/hono on the
// Upstash store, on the store's own REST client (no @upstash/redis: a smaller bundle, and a request is never resent).
// Clients are told apart by CF-Connecting-IP, the address Cloudflare's edge sets and a client cannot forge. The
// REST client and the limiter live at module scope, built on the isolate's first request (bindings
// arrive with it), so warm requests reuse them; every isolate of the fleet shares the counts in Upstash.
import { createLimiter, tokenBucket } from '@sluice/core';
import { rateLimit } from '@sluice/hono';
import { upstashRest, upstashStore } from '@sluice/upstash';
import { Hono } from 'hono';

let app;

function build(env) {
  const redis = upstashRest({ url: env.UPSTASH_REDIS_REST_URL, token: env.UPSTASH_REDIS_REST_TOKEN });
  // Bursts of 5, refilled at 1 per minute.
  const limiter = createLimiter({
    store: upstashStore(redis),
    name: 'api',
    rules: tokenBucket({ capacity: 5, refillRate: 1, interval: '1m' }),
    timeout: '1s',
  });

  const hono = new Hono();
  hono.use(
    '/api/*',
    rateLimit({
      limiter,
      clientIp: { platform: 'cloudflare' },
      // Runs after the response is sent, kept alive by ctx.waitUntil: a refusal log that costs the client nothing.
      onLimited: ({ identity }) => redis.command(['INCR', `refusals:${identity}`]),
    }),
  );
  hono.get('/api/hello', (c) => c.json({ hello: 'world', remaining: c.get('rateLimit').results[0]?.decision.remaining }));
  return hono;
}

export default {
  fetch(request, env, ctx) {
    app ??= build(env);
    return app.fetch(request, env, ctx);
  },
};
