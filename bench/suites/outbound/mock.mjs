// The mock third party of the outbound suite: an HTTP server on 127.0.0.1 that allows `limit` requests per fixed
// 1 s window (epoch seconds, as many APIs count them) per client (the `x-client` header), answers 200 within it
// and 429 past it, and keeps every arrival (epoch ms, status) per client for the report.
import { once } from 'node:events';
import { createServer } from 'node:http';

/** @returns {Promise<{ port: number, arrivals: (client: string) => Array<{ at: number, status: number }>, close: () => Promise<void> }>} */
export async function startMockThirdParty({ limit }) {
  const windows = new Map(); // `${client} ${second}` -> requests seen in that second
  const arrivals = new Map(); // client -> [{ at, status }]
  const server = createServer((req, res) => {
    const at = Date.now();
    const client = String(req.headers['x-client'] ?? 'anonymous');
    const key = `${client} ${Math.floor(at / 1000)}`;
    const seen = (windows.get(key) ?? 0) + 1;
    windows.set(key, seen);
    const status = seen > limit ? 429 : 200;
    if (!arrivals.has(client)) arrivals.set(client, []);
    arrivals.get(client).push({ at, status });
    res.writeHead(status, { 'content-type': 'text/plain', 'content-length': status === 200 ? 2 : 17 });
    res.end(status === 200 ? 'ok' : 'too many requests');
  });
  return { ...(await listen(server)), arrivals: (client) => arrivals.get(client) ?? [] };
}

/** Listens on a free loopback port; `close` ends the keep-alive connections too. */
async function listen(server) {
  server.keepAliveTimeout = 60_000;
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  return {
    port: server.address().port,
    close: () => {
      server.closeAllConnections();
      return new Promise((resolve) => server.close(resolve));
    },
  };
}

/**
 * What the third party saw from one client, per fixed 1 s window: counts from the first window to the last, the
 * windows over the limit, and the utilisation over the full windows (every window but the first and the last,
 * which the run covers only in part): requests in them ÷ (limit × their number).
 */
export function perSecond(arrivals, limit) {
  if (arrivals.length === 0)
    return { counts: [], max: 0, overLimitSeconds: 0, fullWindows: 0, inFullWindows: 0, utilisation: 0, total: 0, rejected: 0 };
  const first = Math.floor(arrivals[0].at / 1000);
  const last = Math.floor(arrivals[arrivals.length - 1].at / 1000);
  const counts = Array.from({ length: last - first + 1 }, () => 0);
  for (const { at } of arrivals) counts[Math.floor(at / 1000) - first]++;
  const full = counts.slice(1, -1);
  const inFullWindows = full.reduce((a, b) => a + b, 0);
  return {
    counts,
    max: Math.max(...counts),
    overLimitSeconds: counts.filter((c) => c > limit).length,
    fullWindows: full.length,
    inFullWindows,
    utilisation: full.length === 0 ? 0 : inFullWindows / (limit * full.length),
    total: arrivals.length,
    rejected: arrivals.filter((a) => a.status === 429).length,
  };
}

/**
 * A third party that counts per sliding second: per client (the `x-client` header), a request is answered 200
 * while fewer than `limit` answered requests arrived in the last 1000 ms, else 429 with `Retry-After` (whole
 * seconds until the oldest of them leaves the second, at least 1) and no limit header: a bare 429. Refusals do
 * not count. `dropAt(at, limit, client)` lowers the limit of that client from the mock's time `at` (epoch ms) on.
 * Every arrival (epoch ms, status, the limit in force) is kept per client for the report.
 * @returns {Promise<{ port: number, arrivals: (client: string) => Array<{ at: number, status: number, limit: number }>, dropAt: (at: number, limit: number, client: string) => void, close: () => Promise<void> }>}
 */
export async function startSlidingThirdParty({ limit }) {
  const drops = new Map(); // client -> { at, limit }
  const accepted = new Map(); // client -> answered arrival times in the last second, oldest first
  const arrivals = new Map(); // client -> [{ at, status, limit }]
  const server = createServer((req, res) => {
    const at = Date.now();
    const client = String(req.headers['x-client'] ?? 'anonymous');
    const drop = drops.get(client);
    const now = drop !== undefined && at >= drop.at ? drop.limit : limit;
    let times = accepted.get(client);
    if (times === undefined) accepted.set(client, (times = []));
    let expired = 0;
    while (expired < times.length && times[expired] <= at - 1000) expired++;
    if (expired > 0) times.splice(0, expired);
    const allowed = times.length < now;
    if (allowed) times.push(at);
    if (!arrivals.has(client)) arrivals.set(client, []);
    arrivals.get(client).push({ at, status: allowed ? 200 : 429, limit: now });
    req.resume();
    if (allowed) {
      res.writeHead(200, { 'content-type': 'text/plain', 'content-length': 2 });
      res.end('ok');
    } else {
      // The oldest of the `now` newest answered requests must leave the second before one more fits.
      const oldest = times[times.length - now] ?? at;
      const retryAfter = Math.max(1, Math.ceil((oldest + 1000 - at) / 1000));
      res.writeHead(429, { 'content-type': 'text/plain', 'content-length': 17, 'retry-after': String(retryAfter) });
      res.end('too many requests');
    }
  });
  return {
    ...(await listen(server)),
    arrivals: (client) => arrivals.get(client) ?? [],
    dropAt: (at, next, client) => {
      drops.set(client, { at, limit: next });
    },
  };
}
