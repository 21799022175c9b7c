// Peer: the same Hono worker rate limited by @upstash/ratelimit on @upstash/redis's Cloudflare build (token
// bucket 10, 1 per second, 429 when limited), as its README writes it. For the size ratio beside hono+upstash.
import { Ratelimit } from '@upstash/ratelimit';
import { Redis } from '@upstash/redis/cloudflare';
import { Hono } from 'hono';

let app;

function build(env) {
  const ratelimit = new Ratelimit({
    redis: new Redis({ url: env.UPSTASH_REDIS_REST_URL, token: env.UPSTASH_REDIS_REST_TOKEN }),
    limiter: Ratelimit.tokenBucket(1, '1 s', 10),
  });
  const hono = new Hono();
  hono.use('/api/*', async (c, next) => {
    const { success, limit, remaining, reset } = await ratelimit.limit(c.req.header('cf-connecting-ip') ?? 'anonymous');
    c.header('X-RateLimit-Limit', String(limit));
    c.header('X-RateLimit-Remaining', String(remaining));
    c.header('X-RateLimit-Reset', String(reset));
    if (!success) return c.text('Too Many Requests', 429);
    await next();
  });
  hono.get('/api/hello', (c) => c.json({ hello: 'world' }));
  return hono;
}

export default {
  fetch(request, env, ctx) {
    app ??= build(env);
    return app.fetch(request, env, ctx);
  },
};
