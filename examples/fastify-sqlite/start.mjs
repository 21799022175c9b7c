#!/usr/bin/env node
// One command, `pnpm start` (or `node start.mjs` once the packages are built): creates a SQLite file in a temp
// folder, serves app.mjs on 127.0.0.1, sends a bounded run of requests (per-route config, a route group, the
// preHandler stage with signed-in users), restarts the app on the same file to show the counters survive, prints
// what each request got, deletes the folder and exits (1 if something did not behave as the README says).
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { createApp } from './app.mjs';
import { table } from '../support/table.mjs';

const watchdog = setTimeout(() => {
  console.error('fastify-sqlite: did not finish within 30 s');
  process.exit(1);
}, 30_000);
watchdog.unref();

const failures = [];
const expect = (ok, what) => {
  if (!ok) failures.push(what);
};

const dir = mkdtempSync(join(tmpdir(), 'sluice-fastify-sqlite-'));
const file = join(dir, 'app.db');

async function start() {
  const built = await createApp(file);
  const url = await built.app.listen({ port: 0, host: '127.0.0.1' });
  return { ...built, url };
}

async function send(base, method, path, { token, body } = {}) {
  const headers = {};
  if (token !== undefined) headers.authorization = `Bearer ${token}`;
  if (body !== undefined) headers['content-type'] = 'application/json';
  const res = await fetch(base + path, { method, headers, body: body === undefined ? undefined : JSON.stringify(body) });
  const text = await res.text();
  let json;
  try {
    json = JSON.parse(text);
  } catch {
    json = undefined;
  }
  return { status: res.status, headers: res.headers, text, json };
}

const h = (r, name) => r.headers.get(name) ?? '-';

let running;
try {
  running = await start();
  const base = running.url;
  console.log(`fastify-sqlite: Fastify app on ${base}, rate-limit state in ${file} (journal mode ${running.store.journalMode})`);
  console.log('plugin: default limiter "api" (token bucket, bursts of 20, 10/s) per client IP, decided in onRequest\n');

  // 1. Per-route config: a route opted out, a route with its own rules, and one on the plugin's default.
  console.log('1. per-route config');
  const rows1 = [['request', 'status', 'RateLimit-Policy', 'RateLimit', 'Retry-After']];
  const health = await send(base, 'GET', '/health');
  rows1.push([
    'GET /health (rateLimit: false)',
    health.status,
    h(health, 'ratelimit-policy'),
    h(health, 'ratelimit'),
    h(health, 'retry-after'),
  ]);
  const items = await send(base, 'GET', '/api/items');
  rows1.push([
    'GET /api/items (the plugin default)',
    items.status,
    h(items, 'ratelimit-policy'),
    h(items, 'ratelimit'),
    h(items, 'retry-after'),
  ]);
  const logins = [];
  for (let i = 1; i <= 5; i++) {
    const r = await send(base, 'POST', '/login', { body: { user: 'alice', password: `guess-${i}` } });
    logins.push(r);
    rows1.push([`POST /login #${i} (its own rules)`, r.status, h(r, 'ratelimit-policy'), h(r, 'ratelimit'), h(r, 'retry-after')]);
  }
  console.log(`${table(rows1)}\n`);
  expect(health.status === 200 && !health.headers.has('ratelimit'), '/health is not limited and gets no RateLimit header');
  expect(items.status === 200 && items.headers.get('ratelimit-policy') === '"api";q=20;w=2', '/api/items uses the plugin limiter');
  expect(logins.map((r) => r.status).join() === '401,401,401,429,429', '/login allows 3 attempts, then 429');
  expect(
    logins.every((r) => r.headers.get('ratelimit-policy') === '"login";q=3;w=900'),
    '/login reports its own policy',
  );

  const sample = logins[3];
  console.log('the first /login 429 in full (status, headers and problem+json body from @sluice/http):');
  console.log(`  HTTP ${sample.status}`);
  for (const name of ['content-type', 'ratelimit-policy', 'ratelimit', 'retry-after']) console.log(`  ${name}: ${h(sample, name)}`);
  console.log(`  ${sample.text}\n`);

  // 2. A route group: both routes draw from one counter per client, whichever is called.
  console.log('2. route group "search" (token bucket, bursts of 5, 1/s): /search/users and /search/posts alternately');
  const rows2 = [['#', 'request', 'status', 'RateLimit']];
  const searches = [];
  for (let i = 1; i <= 7; i++) {
    const path = i % 2 === 1 ? '/search/users' : '/search/posts';
    const r = await send(base, 'GET', path);
    searches.push(r);
    rows2.push([i, `GET ${path}`, r.status, h(r, 'ratelimit')]);
  }
  console.log(`${table(rows2)}\n`);
  const searchAllowed = searches.filter((r) => r.status === 200).length;
  expect(
    searchAllowed >= 5 && searchAllowed <= 6 && searches[6].status === 429,
    'the group admits its burst of 5 across both routes, then 429',
  );
  expect(
    searches.every((r) => (r.headers.get('ratelimit') ?? '').startsWith('"search";')),
    'both routes report the group policy',
  );

  // 3. preHandler stage: the limiter runs after authenticate, so it sees request.user.
  console.log('3. GET /reports: limited per signed-in user (3 a minute), decided in preHandler after the session lookup');
  const rows3 = [['client', 'identity', 'statuses', 'last RateLimit']];
  const reports = {};
  for (const [label, token, count] of [
    ['alice (token-alice)', 'token-alice', 4],
    ['bob (token-bob)', 'token-bob', 2],
    ['no session', undefined, 4],
  ]) {
    const got = [];
    let identity = '-';
    let last;
    for (let i = 0; i < count; i++) {
      last = await send(base, 'GET', '/reports', { token });
      got.push(last.status);
      if (last.json?.identity !== undefined) identity = last.json.identity;
    }
    reports[label] = { got, identity };
    rows3.push([label, identity, got.join(' '), h(last, 'ratelimit')]);
  }
  console.log(`${table(rows3)}\n`);
  expect(
    reports['alice (token-alice)'].got.join() === '200,200,200,429' && reports['alice (token-alice)'].identity === 'user:alice',
    'alice gets 3 reports, then 429',
  );
  expect(
    reports['bob (token-bob)'].got.join() === '200,200' && reports['bob (token-bob)'].identity === 'user:bob',
    "bob, at the same address, is not limited by alice's use",
  );
  expect(
    reports['no session'].got.join() === '401,401,401,429' && reports['no session'].identity === 'ip:127.0.0.1',
    'callers without a session are limited by address (401, then 429)',
  );

  // 4. The counters live in the file: a restarted app (new connections) still refuses the 4th login attempt.
  await running.app.close();
  running = await start();
  const again = await send(running.url, 'POST', '/login', { body: { user: 'alice', password: 'guess-6' } });
  console.log('4. app closed and started again on the same file (new SQLite connections, new limiters)');
  console.log(`  POST /login #6: ${again.status}, RateLimit: ${h(again, 'ratelimit')}, Retry-After: ${h(again, 'retry-after')}\n`);
  expect(again.status === 429, 'the login counter survives a restart of the app');

  const reader = new Database(file, { readonly: true });
  const state = reader.prepare('SELECT key, rule, expires_at FROM sluice_state ORDER BY key, rule').all();
  reader.close();
  console.log(`the sluice_state table in ${file} (one row per identity and rule; key = prefix:limiter:{identity}):`);
  console.log(
    `${table([['key', 'rule', 'expires in'], ...state.map((row) => [row.key, row.rule, row.expires_at > Date.now() ? `${Math.ceil((row.expires_at - Date.now()) / 1000)} s` : 'expired (the sweep deletes it)'])])}\n`,
  );
  expect(
    state.some((row) => row.key.endsWith(':search:{ip:127.0.0.1}')) && !state.some((row) => /search_users|search_posts/.test(row.key)),
    'the group is one counter, not one per route',
  );
} finally {
  await running?.app.close();
  rmSync(dir, { recursive: true, force: true });
}

if (failures.length > 0) {
  for (const what of failures) console.log(`UNEXPECTED: not true that ${what}`);
  process.exitCode = 1;
} else {
  console.log('everything behaved as the README says');
}
