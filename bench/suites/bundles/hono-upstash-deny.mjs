// The Upstash-on-Hono worker of hono-upstash.mjs, enforcing the limiters' deny lists (`denyList: matchDenyList`):
// what a worker ships when it uses the deny list.
import { createLimiter, tokenBucket } from '@sluice/core';
import { matchDenyList, rateLimit } from '@sluice/hono';
import { upstashStore } from '@sluice/upstash';
import { Hono } from 'hono';

let app;

function build(env) {
  const store = upstashStore({ url: env.UPSTASH_REDIS_REST_URL, token: env.UPSTASH_REDIS_REST_TOKEN });
  const limiter = createLimiter({ store, rules: tokenBucket({ capacity: 10, refillRate: 1, interval: '1s' }) });
  const hono = new Hono();
  hono.use('/api/*', rateLimit({ limiter, denyList: matchDenyList, clientIp: { platform: 'cloudflare' } }));
  hono.get('/api/hello', (c) => c.json({ hello: 'world' }));
  return hono;
}

export default {
  fetch(request, env, ctx) {
    app ??= build(env);
    return app.fetch(request, env, ctx);
  },
};
