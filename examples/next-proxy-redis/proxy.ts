// Next.js 16 proxy.ts: runs on the Node runtime (always, in Next 16), so any store works; this one limits every
// /api request with sluice on Redis: one EVALSHA per decision, both rules decided together, all or nothing.
import { createLimiter, fixedWindow, tokenBucket } from '@sluice/core';
import { rateLimit } from '@sluice/next';
import { redisStore } from '@sluice/redis';
import { Redis } from 'ioredis';
import { userFor } from './lib/api-keys';

// Module scope: one connection and one limiter for the server's lifetime, not one per request.
// REDIS_URL is read at run time (start.mjs points it at the redis-server it starts).
const redis = new Redis(process.env.REDIS_URL ?? 'redis://127.0.0.1:6379');

const limiter = createLimiter({
  name: 'api',
  store: redisStore(redis),
  rules: [
    // Bursts of 4, then one request every 15 seconds...
    tokenBucket({ id: 'burst', capacity: 4, refillRate: 1, interval: '15s' }),
    // ...and at most 1,000 a day (UTC days).
    fixedWindow({ id: 'day', limit: 1_000, window: '1d' }),
  ],
});

export const proxy = rateLimit({
  limiter,
  identify: (request) => userFor(request.headers.get('authorization')),
  // `next start` behind exactly one reverse proxy (nginx, Caddy, a load balancer; front-proxy.mjs here) that appends
  // the peer address to X-Forwarded-For: the rightmost entry is the client, whatever the client itself sent.
  // Next.js must not be reachable except through that proxy. See @sluice/next's README for other setups.
  clientIp: { trustProxy: 1 },
  // Background work: an audit trail of refusals in a Redis stream (capped near 10,000 entries). The promise goes
  // to event.waitUntil: the 429 is sent without waiting for it.
  onLimited: ({ identity, decision }) =>
    redis.xadd('sluice:limited', 'MAXLEN', '~', '10000', '*', 'identity', identity, 'rule', decision.rule),
});

// Only the API: pages and /_next assets are not limited (and cost no Redis round trip).
export const config = { matcher: ['/api/:path*'] };
