// The third party the workers call: an HTTP server on 127.0.0.1 that allows `limit` requests per fixed 1 s window
// (epoch seconds, the way many APIs count), answers 200 within it and 429 past it, and remembers when each request
// arrived, so start.mjs can print what it saw per second. GET /v1/status is free (not counted).
import { once } from 'node:events';
import { createServer } from 'node:http';

/** @returns {Promise<{ url: string, arrivals: Array<{ at: number, status: number, worker: string }>, close(): Promise<void> }>} */
export async function startThirdParty({ limit }) {
  const perWindow = new Map(); // epoch second -> requests seen in it
  const arrivals = [];
  const server = createServer((req, res) => {
    if (req.url === '/v1/status') {
      // Outside the quota, as status endpoints usually are: the workers warm their HTTP client up with it.
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end('{"status":"up"}');
      return;
    }
    const at = Date.now();
    const second = Math.floor(at / 1000);
    const seen = (perWindow.get(second) ?? 0) + 1;
    perWindow.set(second, seen);
    const status = seen > limit ? 429 : 200;
    arrivals.push({ at, status, worker: String(req.headers['x-worker'] ?? '?') });
    res.writeHead(status, { 'content-type': 'application/json' });
    res.end(JSON.stringify(status === 200 ? { ok: true } : { error: 'rate limit exceeded' }));
  });
  server.keepAliveTimeout = 30_000;
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  return {
    url: `http://127.0.0.1:${server.address().port}`,
    arrivals,
    close: () => {
      server.closeAllConnections();
      return new Promise((resolve) => server.close(resolve));
    },
  };
}
