// The Upstash-on-Hono worker of hono-upstash.mjs with the user's @upstash/redis client (its Cloudflare build) in
// place of the store's own REST client: what choosing @upstash/redis costs.
import { createLimiter, tokenBucket } from '@sluice/core';
import { rateLimit } from '@sluice/hono';
import { upstashStore } from '@sluice/upstash';
import { Redis } from '@upstash/redis/cloudflare';
import { Hono } from 'hono';

let app;

function build(env) {
  const redis = new Redis({ url: env.UPSTASH_REDIS_REST_URL, token: env.UPSTASH_REDIS_REST_TOKEN });
  const limiter = createLimiter({ store: upstashStore(redis), rules: tokenBucket({ capacity: 10, refillRate: 1, interval: '1s' }) });
  const hono = new Hono();
  hono.use('/api/*', rateLimit({ limiter, clientIp: { platform: 'cloudflare' } }));
  hono.get('/api/hello', (c) => c.json({ hello: 'world' }));
  return hono;
}

export default {
  fetch(request, env, ctx) {
    app ??= build(env);
    return app.fetch(request, env, ctx);
  },
};
