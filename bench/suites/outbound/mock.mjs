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
  server.keepAliveTimeout = 60_000;
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  return {
    port: server.address().port,
    arrivals: (client) => arrivals.get(client) ?? [],
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
  if (arrivals.length === 0) return { counts: [], max: 0, overLimitSeconds: 0, fullWindows: 0, inFullWindows: 0, utilisation: 0, total: 0, rejected: 0 };
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
