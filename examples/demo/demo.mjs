// `pnpm demo`: an Express app on 127.0.0.1 (a free port) guarded by @sluice/express's `rateLimit` middleware, a
// compound limiter on the memory store, and about three seconds of traffic from five clients against it. Prints
// a live progress line, then a table of what each client got, one 429 response as the client saw it (its headers
// and problem+json body come from @sluice/http), and a check of the limiter's guarantee against what the app
// admitted. Exits by itself (exit 1 if a guarantee was broken or nothing was limited).
import express from 'express';
import { createLimiter, slidingWindowLog, tokenBucket } from '@sluice/core';
import { rateLimit } from '@sluice/express';
import { memoryStore } from '@sluice/memory';

const CAPACITY = 10; // burst, requests
const REFILL_PER_SECOND = 5;
const PER_MINUTE = 20;
const EXPORT_COST = 4; // POST /export is heavier than a read

// Two rules that must both pass: bursts of 10 at 5 per second, and never more than 20 in any minute.
const limiter = createLimiter({
  store: memoryStore({ maxKeys: 10_000 }),
  name: 'demo',
  rules: [
    tokenBucket({ id: 'burst', capacity: CAPACITY, refillRate: REFILL_PER_SECOND, interval: '1s' }),
    slidingWindowLog({ id: 'minute', limit: PER_MINUTE, window: '1m' }),
  ],
});

/** Per identity: cost admitted, and the times of its first and last decision, to check the guarantee. */
const admitted = new Map();
/** The identity the middleware resolved for each x-user value ('' for none), for the table. */
const identities = new Map();
function record(req, identity, decision, cost) {
  identities.set(req.get('x-user') ?? '', identity);
  const seen = admitted.get(identity) ?? { first: decision.now, last: decision.now, cost: 0 };
  seen.last = decision.now;
  seen.cost += cost;
  admitted.set(identity, seen);
}

const app = express();
app.disable('x-powered-by');
app.use(
  rateLimit({
    limiter,
    // The signed-in user first (here the x-user header stands in for a session); without one, the socket address.
    identify: (req) => req.get('x-user') || undefined,
    cost: (req) => (req.method === 'POST' && req.path === '/export' ? EXPORT_COST : 1),
    // Refusals are answered by the middleware (429, RateLimit headers, Retry-After, problem+json); note them here.
    onLimited: ({ request, identity, decision }) => record(request, identity, decision, 0),
  }),
);
// Only allowed requests get this far, with the middleware's answer on req.rateLimit.
app.use((req, _res, next) => {
  const { identity, decision, results } = req.rateLimit;
  record(req, identity, decision, results[0].cost);
  next();
});
app.get('/search', (req, res) => res.json({ ok: true, remaining: req.rateLimit.decision.remaining }));
app.post('/export', (req, res) => res.json({ ok: true, exported: true, remaining: req.rateLimit.decision.remaining }));

// Five clients, ~3 s: one polite, one steady but too fast, one sending weighted exports, one flooding at once,
// and one without a user header (identified by its address).
const CLIENTS = [
  { name: 'alice', user: 'alice', requests: 12, everyMs: 250, method: 'GET', path: '/search' },
  { name: 'bob', user: 'bob', requests: 30, everyMs: 100, method: 'GET', path: '/search' },
  { name: 'carol', user: 'carol', requests: 8, everyMs: 400, method: 'POST', path: '/export' },
  { name: 'dave', user: 'dave', requests: 40, everyMs: 0, method: 'GET', path: '/search' },
  { name: '(no header)', user: undefined, requests: 6, everyMs: 500, method: 'GET', path: '/search' },
];

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));
const total = CLIENTS.reduce((sum, c) => sum + c.requests, 0);
const stats = new Map(CLIENTS.map((c) => [c.name, { sent: 0, allowed: 0, limited: 0 }]));
let sample;

async function send(base, client) {
  const headers = client.user === undefined ? {} : { 'x-user': client.user };
  const res = await fetch(base + client.path, { method: client.method, headers });
  const text = await res.text();
  const s = stats.get(client.name);
  s.sent++;
  if (res.status === 200) s.allowed++;
  else if (res.status === 429) {
    s.limited++;
    if (sample === undefined) sample = { client: client.name, res, text };
  } else throw new Error(`unexpected status ${res.status}: ${text}`);
}

async function drive(base, client) {
  if (client.everyMs === 0) {
    await Promise.all(Array.from({ length: client.requests }, () => send(base, client)));
    return;
  }
  for (let i = 0; i < client.requests; i++) {
    await send(base, client);
    await sleep(client.everyMs);
  }
}

let printedSecond = -1;

function progress(started, final) {
  let sent = 0;
  let allowed = 0;
  let limited = 0;
  for (const s of stats.values()) {
    sent += s.sent;
    allowed += s.allowed;
    limited += s.limited;
  }
  const width = 30;
  const filled = Math.round((sent / total) * width);
  const line =
    `  [${'#'.repeat(filled)}${'.'.repeat(width - filled)}] ${String(sent).padStart(3)}/${total} requests  ` +
    `${String(allowed).padStart(3)} allowed  ${String(limited).padStart(3)} limited  ${((Date.now() - started) / 1000).toFixed(1)}s`;
  // On a terminal the line updates in place; in a log (CI) it is printed once a second instead.
  const second = Math.floor((Date.now() - started) / 1000);
  if (process.stdout.isTTY) process.stdout.write(`\r${line}${final ? '\n' : ''}`);
  else if (final || second > printedSecond) process.stdout.write(`${line}\n`);
  printedSecond = second;
}

function table(rows) {
  const widths = rows[0].map((_, i) => Math.max(...rows.map((row) => String(row[i]).length)));
  return rows
    .map((row) => row.map((cell, i) => (i < 2 ? String(cell).padEnd(widths[i]) : String(cell).padStart(widths[i]))).join('   '))
    .join('\n');
}

let server;

async function main() {
  const watchdog = setTimeout(() => {
    console.error('\ndemo: did not finish within 15 s');
    process.exit(1);
  }, 15_000);
  watchdog.unref();

  server = await new Promise((resolve, reject) => {
    const listening = app.listen(0, '127.0.0.1', (error) => (error ? reject(error) : resolve(listening)));
  });
  const base = `http://127.0.0.1:${server.address().port}`;
  console.log(`sluice demo: Express app on ${base}, rateLimit() middleware, limiter "demo" on the memory store`);
  console.log(
    `rules: token bucket (burst ${CAPACITY}, ${REFILL_PER_SECOND}/s) AND sliding log (${PER_MINUTE}/min); POST /export costs ${EXPORT_COST}`,
  );
  console.log('identity: the x-user header (user:<name>), else the socket address (ip:<address>)\n');

  const started = Date.now();
  const ticker = setInterval(() => progress(started, false), 100);
  try {
    await Promise.all(CLIENTS.map((client) => drive(base, client)));
  } finally {
    clearInterval(ticker);
    progress(started, true);
    server.closeAllConnections();
    server.close();
  }

  const rows = [['client', 'identity', 'requests', 'allowed', 'limited']];
  for (const c of CLIENTS) {
    const s = stats.get(c.name);
    const identity = identities.get(c.user ?? '') ?? '?';
    rows.push([`${c.name}${c.method === 'POST' ? ` (cost ${EXPORT_COST})` : ''}`, identity, s.sent, s.allowed, s.limited]);
  }
  console.log(`\n${table(rows)}\n`);

  if (sample !== undefined) {
    console.log(`one 429, as ${sample.client} saw it (headers and body written by @sluice/http):`);
    console.log(`  HTTP ${sample.res.status} ${sample.res.statusText}`);
    for (const name of ['RateLimit-Policy', 'RateLimit', 'Retry-After', 'Content-Type'])
      console.log(`  ${name}: ${sample.res.headers.get(name)}`);
    console.log(`  ${sample.text}\n`);
  }

  // The contract, checked on what the app admitted: cost admitted in [first, last] <= burst + rate × elapsed,
  // and never more than the per-minute limit (the whole run is shorter than a minute).
  let held = true;
  for (const [identity, seen] of admitted) {
    const bound = Math.min(CAPACITY + Math.floor((REFILL_PER_SECOND * (seen.last - seen.first)) / 1000), PER_MINUTE);
    if (seen.cost > bound) {
      held = false;
      console.log(`GUARANTEE BROKEN for ${identity}: admitted cost ${seen.cost} > bound ${bound}`);
    }
  }
  const limited = [...stats.values()].some((s) => s.limited > 0);
  console.log(held ? 'every client stayed within burst + rate x elapsed, and within 20 per minute' : 'a guarantee was broken');
  if (!held || !limited || sample === undefined) process.exitCode = 1;
}

main().catch((error) => {
  console.error(error);
  process.exitCode = 1;
  server?.closeAllConnections();
  server?.close();
});
