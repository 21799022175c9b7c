// Next.js edge middleware (middleware.ts) on the Upstash store. next/server is left out of the bundle: Next
// provides it to every middleware whether or not it rate limits.
import { createLimiter, tokenBucket } from '@sluice/core';
import { rateLimit } from '@sluice/next';
import { upstashStore } from '@sluice/upstash';

const limiter = createLimiter({
  store: upstashStore({ url: 'https://example.upstash.io', token: 'token' }),
  rules: tokenBucket({ capacity: 10, refillRate: 1, interval: '1s' }),
});
const limit = rateLimit({ limiter, clientIp: { platform: 'vercel' } });

export function middleware(request, event) {
  return limit(request, event);
}
export const config = { matcher: '/api/:path*' };
