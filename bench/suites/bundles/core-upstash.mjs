// A fetch handler on the Upstash store on its own REST client, headers written by hand.
import { createLimiter, tokenBucket } from '@sluice/core';
import { upstashStore } from '@sluice/upstash';

let limiter;

export default {
  async fetch(request, env) {
    limiter ??= createLimiter({
      store: upstashStore({ url: env.UPSTASH_REDIS_REST_URL, token: env.UPSTASH_REDIS_REST_TOKEN }),
      rules: tokenBucket({ capacity: 10, refillRate: 1, interval: '1s' }),
    });
    const decision = await limiter.limit(request.headers.get('cf-connecting-ip') ?? 'anonymous');
    return new Response(decision.allowed ? 'ok' : 'slow down', {
      status: decision.allowed ? 200 : 429,
      headers: { 'ratelimit-remaining': String(decision.remaining) },
    });
  },
};
