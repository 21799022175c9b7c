#!/usr/bin/env node
// One command, `pnpm start` (or `node start.mjs` once the packages are built): starts a throwaway redis-server on
// a free port, serves app.mjs on 127.0.0.1, and plays the reverse proxy in front of it for a bounded run of
// traffic in four parts: an /api burst, a /login brute force with forged X-Forwarded-For, Redis killed mid-run
// (degraded answers), Redis back. Prints what each request got, stops everything and exits (1 if something did
// not behave as the README says).
import { once } from 'node:events';
import { Redis } from 'ioredis';
import { createApp, TRUSTED_PROXIES } from './app.mjs';
import { startRedisServer } from '../support/redis-server.mjs';
import { table } from '../support/table.mjs';

const watchdog = setTimeout(() => {
  console.error('express-redis: did not finish within 30 s');
  process.exit(1);
}, 30_000);
watchdog.unref();

const failures = [];
const expect = (ok, what) => {
  if (!ok) failures.push(what);
};
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

const redisServer = await startRedisServer({ name: 'express-redis' });
// Client settings for an outage (see @sluice/redis's README): no offline queue, so a command fails at once while
// Redis is unreachable instead of waiting and running later; reconnect every 100 ms.
const redis = new Redis({
  host: redisServer.host,
  port: redisServer.port,
  enableOfflineQueue: false,
  maxRetriesPerRequest: 0,
  retryStrategy: () => 100,
});
// Connection errors are expected while Redis is down; without a listener ioredis prints each one. The limiter
// reports what matters (every degraded decision) through onError below.
redis.on('error', () => {});
await once(redis, 'ready');

/** Store failures, as the handler's onError hook saw them: `${limiterName} ${code}` -> count. */
const storeErrors = new Map();
const { app, limiters } = createApp(redis, {
  onStoreError: (error, { limiterName }) => {
    const key = `${limiterName} ${error?.code ?? 'error'}`;
    storeErrors.set(key, (storeErrors.get(key) ?? 0) + 1);
  },
});
const server = app.listen(0, '127.0.0.1');
await once(server, 'listening');
const base = `http://127.0.0.1:${server.address().port}`;

/**
 * One request through "the proxy": this script connects from 127.0.0.1 (the trusted proxy) and, as nginx's
 * $proxy_add_x_forwarded_for does, appends the client's address to whatever X-Forwarded-For the client sent.
 */
async function send(method, path, { client, forged, apiKey, body } = {}) {
  const headers = { 'x-forwarded-for': forged === undefined ? client : `${forged}, ${client}` };
  if (apiKey !== undefined) headers['x-api-key'] = apiKey;
  if (body !== undefined) headers['content-type'] = 'application/json';
  const res = await fetch(base + path, { method, headers, body: body === undefined ? undefined : JSON.stringify(body) });
  const text = await res.text();
  let json;
  try {
    json = JSON.parse(text);
  } catch {
    json = undefined;
  }
  return { status: res.status, headers: res.headers, text, json, forwarded: headers['x-forwarded-for'] };
}

let sample;
try {
  console.log(
    `express-redis: Express app on ${base}, redis-server ${redisServer.version} on ${redisServer.host}:${redisServer.port} (started by this script)`,
  );
  console.log('limiters: api   = token bucket, bursts of 10, 5/s, per API key or client IP; fails open (onStoreError: allow)');
  console.log('          login = sliding log, 3 in any 15 min, per client IP; fails closed (onStoreError: deny)');
  console.log(
    `client IP: clientIp.trustProxy ${JSON.stringify(TRUSTED_PROXIES)}; this script plays that proxy and appends each client's address to X-Forwarded-For\n`,
  );

  // 1. /api: one limiter for the whole path, a counter per identity. bob shares an address with the anonymous
  // client but has his own bucket: users are limited as users, not by where they connect from.
  console.log(
    '1. GET /api/items, sent one after another: alice x14 (API key), anonymous x14 from 198.51.100.23, bob x3 (API key, same address)',
  );
  const apiClients = [
    { label: 'alice', options: { client: '198.51.100.10', apiKey: 'key-alice' }, count: 14 },
    { label: 'anonymous', options: { client: '198.51.100.23' }, count: 14 },
    { label: 'bob', options: { client: '198.51.100.23', apiKey: 'key-bob' }, count: 3 },
  ];
  const apiRows = [['client', 'identity', 'requests', '200', '429', 'last RateLimit']];
  const apiStats = new Map();
  for (const { label, options, count } of apiClients) {
    const s = { identity: '?', ok: 0, limited: 0, rateLimit: '' };
    for (let i = 0; i < count; i++) {
      const r = await send('GET', '/api/items', options);
      if (r.status === 200) {
        s.ok++;
        s.identity = r.json.identity;
      } else if (r.status === 429) s.limited++;
      else throw new Error(`/api answered ${r.status}: ${r.text}`);
      s.rateLimit = r.headers.get('ratelimit');
    }
    apiStats.set(label, s);
    apiRows.push([label, s.identity, count, s.ok, s.limited, s.rateLimit]);
  }
  console.log(`${table(apiRows)}\n`);
  expect(apiStats.get('alice').ok >= 10 && apiStats.get('alice').limited > 0, 'alice gets her burst of 10, then 429');
  expect(
    apiStats.get('anonymous').identity === 'ip:198.51.100.23' && apiStats.get('anonymous').limited > 0,
    'the anonymous client is limited by its address',
  );
  expect(apiStats.get('bob').identity === 'user:bob' && apiStats.get('bob').limited === 0, 'bob has his own bucket');

  // 2. /login: its own strict limiter. The attacker's forged X-Forwarded-For entries land left of the address
  // the proxy appended, which is the only one the app reads.
  console.log(
    "2. POST /login with a wrong password: 6 attempts from 203.0.113.7 (the last 3 forge X-Forwarded-For), then 1 from alice's address",
  );
  const loginRows = [['#', 'X-Forwarded-For at the app', 'status', 'RateLimit', 'Retry-After']];
  const attacker = [];
  for (let i = 1; i <= 6; i++) {
    const r = await send('POST', '/login', {
      client: '203.0.113.7',
      forged: i > 3 ? `192.0.2.${i}` : undefined,
      body: { user: 'alice', password: `guess-${i}` },
    });
    attacker.push(r);
    if (r.status === 429 && sample === undefined) sample = r;
    loginRows.push([i, r.forwarded, r.status, r.headers.get('ratelimit') ?? '-', r.headers.get('retry-after') ?? '-']);
  }
  const other = await send('POST', '/login', { client: '198.51.100.10', body: { user: 'alice', password: 'typo' } });
  loginRows.push(['alice', other.forwarded, other.status, other.headers.get('ratelimit') ?? '-', other.headers.get('retry-after') ?? '-']);
  console.log(`${table(loginRows)}\n`);
  expect(
    attacker.slice(0, 3).every((r) => r.status === 401 && r.json.identity === 'ip:203.0.113.7'),
    'the first 3 attempts reach the password check as ip:203.0.113.7',
  );
  expect(
    attacker.slice(3).every((r) => r.status === 429 && r.headers.has('retry-after')),
    'attempts 4 to 6 get 429 with Retry-After, forged header or not',
  );
  expect(other.status === 401, "another address still reaches /login: the attacker's counter is not alice's");

  if (sample !== undefined) {
    console.log('one of those 429s in full (status, headers and problem+json body from @sluice/http):');
    console.log(`  HTTP ${sample.status}`);
    for (const name of ['content-type', 'ratelimit-policy', 'ratelimit', 'retry-after'])
      console.log(`  ${name}: ${sample.headers.get(name)}`);
    console.log(`  ${sample.text}\n`);
  }

  // 3. Redis dies. Each limiter answers by its own failure policy, marked degraded; no RateLimit counts are
  // invented. After 5 failures the circuit breaker stops calling Redis (CIRCUIT_OPEN) for 500 ms at a time.
  await redisServer.kill();
  for (let i = 0; i < 40 && redis.status === 'ready'; i++) await sleep(25); // until ioredis has seen the socket close
  console.log(`3. redis-server killed (SIGKILL); ioredis status: ${redis.status}`);
  const downRows = [['request', 'status', 'body', 'RateLimit', 'Retry-After']];
  const down = { api: [], login: [] };
  for (let i = 0; i < 6; i++) {
    const r = await send('GET', '/api/items', { client: '198.51.100.10', apiKey: 'key-alice' });
    down.api.push(r);
    downRows.push([
      'GET /api/items (alice)',
      r.status,
      r.status === 200 ? `degraded: ${r.json.degraded}` : (r.json?.title ?? r.text),
      r.headers.get('ratelimit') ?? '-',
      r.headers.get('retry-after') ?? '-',
    ]);
  }
  for (let i = 0; i < 2; i++) {
    const r = await send('POST', '/login', { client: '198.51.100.77', body: { user: 'carol', password: 'x' } });
    down.login.push(r);
    downRows.push([
      'POST /login (198.51.100.77)',
      r.status,
      r.json?.title ?? r.text,
      r.headers.get('ratelimit') ?? '-',
      r.headers.get('retry-after') ?? '-',
    ]);
  }
  console.log(table(downRows));
  const errorCounts = [...storeErrors].map(([key, n]) => `${key} x${n}`).join(', ');
  console.log(`  onError saw: ${errorCounts}; circuit breakers: api ${limiters.api.circuit}, login ${limiters.login.circuit}\n`);
  expect(
    down.api.every((r) => r.status === 200 && r.json.degraded === true && !r.headers.has('ratelimit')),
    '/api fails open: 200, degraded, no RateLimit counts',
  );
  expect(
    down.login.every((r) => r.status === 503 && r.headers.get('retry-after') === '1'),
    '/login fails closed: 503 with Retry-After: 1',
  );
  expect((storeErrors.get('api CIRCUIT_OPEN') ?? 0) > 0 && limiters.api.circuit === 'open', "api's circuit breaker opened");

  // 4. Redis comes back (empty: this one keeps no data). ioredis reconnects; after its cooldown the breaker lets
  // a probe through, the probe succeeds, and decisions are exact again.
  const downAt = Date.now();
  await redisServer.restart();
  let back;
  for (let i = 0; i < 100; i++) {
    const r = await send('GET', '/api/items', { client: '198.51.100.10', apiKey: 'key-alice' });
    if (r.status === 200 && r.json.degraded === false) {
      back = r;
      break;
    }
    await sleep(50);
  }
  console.log(`4. redis-server restarted on port ${redisServer.port}`);
  if (back === undefined) {
    console.log('  no exact decision within 5 s');
  } else {
    console.log(
      `  exact decisions again ${Date.now() - downAt} ms after the restart began: GET /api/items (alice) 200, degraded: false, RateLimit: ${back.headers.get('ratelimit')}`,
    );
    console.log('  (the counters started over: a Redis without persistence forgets them; use AOF or a replica if that matters)');
  }
  expect(back !== undefined && back.headers.has('ratelimit'), 'decisions are exact again once Redis is back');
} finally {
  server.closeAllConnections();
  server.close();
  redis.disconnect();
  await redisServer.stop();
}

console.log('');
if (failures.length > 0) {
  for (const what of failures) console.log(`UNEXPECTED: not true that ${what}`);
  process.exitCode = 1;
} else {
  console.log('everything behaved as the README says');
}
