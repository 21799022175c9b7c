// A fetch handler on the memory store, headers written by hand (no @sluice/http).
import { createLimiter, tokenBucket } from '@sluice/core';
import { memoryStore } from '@sluice/memory';

const limiter = createLimiter({ store: memoryStore(), rules: tokenBucket({ capacity: 10, refillRate: 1, interval: '1s' }) });

export default {
  async fetch(request) {
    const decision = await limiter.limit(request.headers.get('cf-connecting-ip') ?? 'anonymous');
    return new Response(decision.allowed ? 'ok' : 'slow down', {
      status: decision.allowed ? 200 : 429,
      headers: { 'ratelimit-remaining': String(decision.remaining) },
    });
  },
};
