// @sluice/tiered in front of the Upstash store: the local tier (memory store, lru-cache) and the remote one.
import { createLimiter, tokenBucket } from '@sluice/core';
import { tieredStore } from '@sluice/tiered';
import { upstashStore } from '@sluice/upstash';

let limiter;

export default {
  async fetch(request, env) {
    limiter ??= createLimiter({
      store: tieredStore({ remote: upstashStore({ url: env.UPSTASH_REDIS_REST_URL, token: env.UPSTASH_REDIS_REST_TOKEN }), instances: 4 }),
      rules: tokenBucket({ capacity: 10, refillRate: 1, interval: '1s' }),
    });
    const decision = await limiter.limit(request.headers.get('cf-connecting-ip') ?? 'anonymous');
    return new Response(decision.allowed ? 'ok' : 'slow down', { status: decision.allowed ? 200 : 429 });
  },
};
