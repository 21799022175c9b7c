// The application: an Express 5 app behind one reverse proxy, rate limited by @sluice/express on Redis.
// Everything about rate limiting is in this file; start.mjs only runs it and sends traffic.
import express from 'express';
import { createLimiter, slidingWindowLog, tokenBucket } from '@sluice/core';
import { rateLimit } from '@sluice/express';
import { redisStore } from '@sluice/redis';

/** API keys and the users they belong to (a real app looks them up in its database). */
const API_KEYS = new Map([
  ['key-alice', 'alice'],
  ['key-bob', 'bob'],
]);

/**
 * The proxy in front of the app, the only address allowed to write X-Forwarded-For. The client is the rightmost
 * entry not in this list; whatever a client writes itself stays to the left and is never read. Without this the
 * client is the socket address and the header is ignored (the default, right when there is no proxy).
 */
export const TRUSTED_PROXIES = ['127.0.0.1/32'];

/**
 * @param {import('ioredis').Redis} redis  the app's own client; the store never changes or closes it
 * @param {{ onStoreError?: (error: unknown, context: { limiterName?: string }) => void }} [hooks]
 */
export function createApp(redis, hooks = {}) {
  const store = redisStore(redis);
  // Every Redis call has a 250 ms deadline (a hung Redis adds at most that to a request); after 5 failures in a row
  // the breaker stops calling Redis for 500 ms, then lets one probe through.
  const resilience = { timeout: '250ms', circuitBreaker: { failureThreshold: 5, cooldown: '500ms' } };

  // The general API: bursts of 10, 5 per second, per user (API key) or per client IP. Fails open: a Redis outage
  // must not become an API outage; those answers are marked degraded, never passed off as ordinary allows.
  const api = createLimiter({
    name: 'api',
    store,
    rules: tokenBucket({ capacity: 10, refillRate: 5 }),
    onStoreError: 'allow',
    ...resilience,
  });
  // Login: 3 attempts in any 15 minutes per client IP. A sliding log, not a fixed window: no boundary where an
  // attacker gets 3 more at once. Fails closed: while Redis is down password guessing would be unlimited, so the
  // route answers 503 with Retry-After instead.
  const login = createLimiter({
    name: 'login',
    store,
    rules: slidingWindowLog({ limit: 3, window: '15m' }),
    onStoreError: 'deny',
    ...resilience,
  });

  const shared = {
    clientIp: { trustProxy: TRUSTED_PROXIES },
    // Store failures reach here instead of the default console warning (once a minute).
    onError: (error, context) => hooks.onStoreError?.(error, context),
  };

  const app = express();
  app.disable('x-powered-by');
  app.get('/health', (_req, res) => res.json({ ok: true })); // declared before any limiter: never limited

  // Per-route limiters: one middleware for everything under /api, another for /login only. A request counts
  // against the limiters on its path, no others.
  app.use('/api', rateLimit({ limiter: api, identify: (req) => API_KEYS.get(req.get('x-api-key') ?? ''), ...shared }));
  app.get('/api/items', (req, res) => {
    const { identity, degraded } = req.rateLimit;
    res.json({ items: ['a', 'b', 'c'], identity, degraded });
  });

  app.post('/login', rateLimit({ limiter: login, ...shared }), express.json(), (req, res) => {
    // The limit counts attempts, so it runs before the password check (and before the body is even parsed).
    const ok = req.body?.password === 'correct horse';
    res.status(ok ? 200 : 401).json({ ok, identity: req.rateLimit.identity });
  });

  return { app, limiters: { api, login } };
}
