// @sluice/http's handler in a bare fetch handler (identity from CF-Connecting-IP, RateLimit headers, problem+json),
// on the memory store.
import { createLimiter, tokenBucket } from '@sluice/core';
import { applyHeaders, createHandler, toResponse } from '@sluice/http';
import { memoryStore } from '@sluice/memory';

const limiter = createLimiter({ store: memoryStore(), rules: tokenBucket({ capacity: 10, refillRate: 1, interval: '1s' }) });
const handler = createHandler({ limiter, clientIp: { platform: 'cloudflare' } });

export default {
  async fetch(request) {
    const result = await handler.handle({ headers: request.headers, method: request.method, url: request.url }, request);
    if (!result.allowed) return toResponse(result);
    const response = new Response('ok');
    applyHeaders(result.headers, response.headers);
    return response;
  },
};
