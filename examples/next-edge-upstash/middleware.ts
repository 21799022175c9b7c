// Next.js middleware on the edge runtime (middleware.ts; in Next 16 proxy.ts always runs on Node, so edge code
// keeps this file name). Every /api request is rate limited by sluice on Upstash: one REST request per decision.
import { createLimiter, tokenBucket } from '@sluice/core';
import { rateLimit, toNextResponse, withRateLimitHeaders } from '@sluice/next';
import { upstashStore } from '@sluice/upstash';
import { Redis } from '@upstash/redis';
import { NextResponse, type NextFetchEvent, type NextRequest } from 'next/server';
import { userFor } from './lib/api-keys';

// Module scope: one client and one limiter per edge instance, reused while it stays warm. The client reads
// UPSTASH_REDIS_REST_URL and UPSTASH_REDIS_REST_TOKEN at run time (start.mjs points them at the local fixture).
const redis = Redis.fromEnv();

const limiter = createLimiter({
  name: 'api',
  store: upstashStore(redis),
  // Bursts of 5, then one request every 20 seconds.
  rules: tokenBucket({ capacity: 5, refillRate: 1, interval: '20s' }),
  // One HTTP round trip to the database's region; give it more than the 250 ms default.
  timeout: '500ms',
});

const limit = rateLimit({
  limiter,
  identify: (request) => userFor(request.headers.get('authorization')),
  // Anonymous clients by IP, read from the header Vercel's edge writes (it overwrites what the client sent).
  // Anywhere else, pick the setting that matches what is in front of the app: see @sluice/next's README.
  clientIp: { platform: 'vercel' },
  // Background work: who gets limited, counted in Redis. The promise goes to event.waitUntil, so it neither
  // delays the 429 nor gets cut off when the response is sent.
  onLimited: ({ identity }) => redis.zincrby('sluice:limited', 1, identity),
});

export async function middleware(request: NextRequest, event: NextFetchEvent) {
  const result = await limit.check(request, event);
  if (!result.allowed) return toNextResponse(result); // 429 + RateLimit + Retry-After + problem+json
  // Allowed: continue to the route, telling it whom the limit counted (overwriting anything the client sent),
  // and put the RateLimit headers on the route's response.
  const headers = new Headers(request.headers);
  headers.set('x-rate-limit-identity', result.identity ?? '');
  return withRateLimitHeaders(result, NextResponse.next({ request: { headers } }));
}

// Only the API: pages, /_next/static assets and images are not limited (and do not cost a Redis round trip).
export const config = { matcher: ['/api/:path*'] };
