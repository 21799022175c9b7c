// `pnpm demo`: an HTTP server (node:http, 127.0.0.1, a free port) guarded by a sluice limiter on the memory
// store, and about three seconds of traffic from five clients against it. Prints a live progress line, then
// a table of what each client got, one 429 response as the client saw it, and a check of the limiter's
// guarantee against what the server admitted. Exits by itself (exit 1 if a guarantee was broken).
import { createServer } from 'node:http';
import { createLimiter, slidingWindowLog, tokenBucket } from '@sluice/core';
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

// IETF RateLimit headers (draft-ietf-httpapi-ratelimit-headers): every policy, and the deciding one's state.
// A later version of this demo uses @sluice/http for this; seconds are rounded up so clients never retry early.
function rateLimitHeaders(decision) {
  const seconds = (ms) => Math.max(0, Math.ceil(ms / 1000));
  const headers = {
    'RateLimit-Policy': decision.rules.map((r) => `"${r.id}";q=${r.limit};w=${seconds(r.windowMs)}`).join(', '),
    RateLimit: `"${decision.rule}";r=${decision.remaining};t=${seconds(decision.resetAt - decision.now)}`,
  };
  if (!decision.allowed && Number.isFinite(decision.retryAfter)) headers['Retry-After'] = String(seconds(decision.retryAfter));
  return headers;
}

/** Server-side tally per identity, to check the guarantee against what was really admitted. */
const admitted = new Map();

const server = createServer(async (req, res) => {
  // Authenticated user first, the client address only as a fallback.
  const user = req.headers['x-user'];
  const identity = typeof user === 'string' && user !== '' ? `user:${user}` : `ip:${req.socket.remoteAddress}`;
  const cost = req.method === 'POST' && req.url === '/export' ? EXPORT_COST : 1;
  const decision = await limiter.limit(identity, { cost });
  const seen = admitted.get(identity) ?? { first: decision.now, last: decision.now, cost: 0 };
  seen.last = decision.now;
  if (decision.allowed) seen.cost += cost;
  admitted.set(identity, seen);
  const status = decision.allowed ? 200 : 429;
  const body = decision.allowed
    ? { ok: true, remaining: decision.remaining }
    : { error: 'rate_limited', rule: decision.rule, retryAfterMs: decision.retryAfter };
  res.writeHead(status, { 'content-type': 'application/json', ...rateLimitHeaders(decision) });
  res.end(JSON.stringify(body));
});

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
    if (sample === undefined && res.headers.has('retry-after')) sample = { client: client.name, res, text };
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
  const line = `  [${'#'.repeat(filled)}${'.'.repeat(width - filled)}] ${String(sent).padStart(3)}/${total} requests  ` +
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
    .map((row) => row.map((cell, i) => (i === 0 ? String(cell).padEnd(widths[i]) : String(cell).padStart(widths[i]))).join('   '))
    .join('\n');
}

async function main() {
  const watchdog = setTimeout(() => {
    console.error('\ndemo: did not finish within 15 s');
    process.exit(1);
  }, 15_000);
  watchdog.unref();

  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  const base = `http://127.0.0.1:${server.address().port}`;
  console.log(`sluice demo: server on ${base}, limiter "demo" on the memory store`);
  console.log(`rules: token bucket (burst ${CAPACITY}, ${REFILL_PER_SECOND}/s) AND sliding log (${PER_MINUTE}/min); POST /export costs ${EXPORT_COST}\n`);

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

  const rows = [['client', 'requests', 'allowed', 'limited']];
  for (const c of CLIENTS) {
    const s = stats.get(c.name);
    rows.push([`${c.name}${c.method === 'POST' ? ` (cost ${EXPORT_COST})` : ''}`, s.sent, s.allowed, s.limited]);
  }
  console.log(`\n${table(rows)}\n`);

  if (sample !== undefined) {
    console.log(`one 429, as ${sample.client} saw it:`);
    console.log(`  HTTP ${sample.res.status} ${sample.res.statusText}`);
    for (const name of ['RateLimit-Policy', 'RateLimit', 'Retry-After']) console.log(`  ${name}: ${sample.res.headers.get(name)}`);
    console.log(`  ${sample.text}\n`);
  }

  // The contract, checked on what the server admitted: cost admitted in [first, last] <= burst + rate × elapsed,
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
  server.close();
});
