// The application: a Fastify 5 app rate limited by @sluice/fastify, its counters in a SQLite file (@sluice/sqlite
// on better-sqlite3). Everything about rate limiting is in this file; start.mjs only runs it and sends traffic.
import Database from 'better-sqlite3';
import Fastify from 'fastify';
import { createLimiter, slidingWindowLog, tokenBucket } from '@sluice/core';
import { rateLimitPlugin } from '@sluice/fastify';
import { sqliteStore } from '@sluice/sqlite';

/**
 * Builds the app on one SQLite file, opened twice: one connection for the app's own tables (sessions here), one
 * for the rate limiter, so its short write transactions never interleave with the app's.
 * @param {string} file  path of the SQLite file; created if missing
 */
export async function createApp(file) {
  const db = new Database(file);
  db.exec('CREATE TABLE IF NOT EXISTS sessions (token TEXT PRIMARY KEY, user_id TEXT NOT NULL)');
  db.prepare('INSERT OR IGNORE INTO sessions (token, user_id) VALUES (?, ?), (?, ?)').run('token-alice', 'alice', 'token-bob', 'bob');
  const findSession = db.prepare('SELECT user_id FROM sessions WHERE token = ?').pluck();

  const limitsDb = new Database(file);
  const store = sqliteStore(limitsDb); // WAL and synchronous=NORMAL: see @sluice/sqlite's README

  const app = Fastify();
  app.decorateRequest('user', null);
  app.addHook('onClose', () => {
    limitsDb.close();
    db.close();
  });

  await app.register(rateLimitPlugin, {
    // Every route that says nothing else: bursts of 20, 10 per second, per client IP, decided in onRequest
    // (before the body is read: the cheapest place to refuse).
    limiter: createLimiter({ name: 'api', store, rules: tokenBucket({ capacity: 20, refillRate: 10 }) }),
    store, // for the `rules` in route and group configs below
    groups: {
      // One counter per client shared by every route that names the group.
      search: { rules: tokenBucket({ capacity: 5, refillRate: 1 }) },
    },
  });

  // Sessions are checked here, after the plugin's onRequest stage. It sets request.user, and rejects nobody
  // itself: the route decides what an anonymous caller gets.
  async function authenticate(request) {
    const token = /^Bearer (\S+)$/.exec(request.headers.authorization ?? '')?.[1];
    const userId = token === undefined ? undefined : findSession.get(token);
    if (userId !== undefined) request.user = { id: userId };
  }

  app.get('/health', { config: { rateLimit: false } }, async () => ({ ok: true }));
  app.get('/api/items', async (request) => ({ items: ['a', 'b', 'c'], identity: request.rateLimit.identity }));

  // A route with rules of its own: its own counter, named 'login' in headers and in the store.
  app.post(
    '/login',
    { config: { rateLimit: { name: 'login', rules: slidingWindowLog({ limit: 3, window: '15m' }) } } },
    async (request, reply) => {
      const ok = request.body?.password === 'correct horse';
      return reply.code(ok ? 200 : 401).send({ ok });
    },
  );

  // A route group: /search/users and /search/posts draw from one bucket per client.
  app.get('/search/users', { config: { rateLimit: 'search' } }, async () => ({ users: [] }));
  app.get('/search/posts', { config: { rateLimit: 'search' } }, async () => ({ posts: [] }));

  // Limited per signed-in user, so the decision waits for authenticate: the preHandler stage, after the route's
  // own preHandler. Callers without a session are limited by address, then answered 401 by the handler.
  app.get(
    '/reports',
    {
      preHandler: authenticate,
      config: {
        rateLimit: {
          name: 'reports',
          rules: slidingWindowLog({ limit: 3, window: '1m' }),
          hook: 'preHandler',
          identify: (request) => request.user?.id,
        },
      },
    },
    async (request, reply) => {
      if (request.user === null) return reply.code(401).send({ error: 'sign in first', identity: request.rateLimit.identity });
      return { reports: ['q1', 'q2'], identity: request.rateLimit.identity };
    },
  );

  return { app, store };
}
