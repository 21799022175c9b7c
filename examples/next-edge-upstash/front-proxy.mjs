// Plays Vercel's edge in front of `next start`, locally: every request is forwarded to Next.js with
// `x-vercel-forwarded-for` and `x-real-ip` set to the TCP peer's address, overwriting whatever the client sent.
// That overwrite is what makes `clientIp: { platform: 'vercel' }` safe on Vercel, so the example behaves here as
// it would there. Next.js itself listens on loopback only, so nothing reaches it except through this proxy.
import { Agent, createServer, request } from 'node:http';

const PLATFORM_HEADERS = ['x-vercel-forwarded-for', 'x-real-ip'];

/**
 * @param {{ target: URL, port?: number, host?: string }} options  target: where `next start` listens
 * @returns {Promise<{ url: string, close(): Promise<void> }>}
 */
export async function startFrontProxy({ target, port = 0, host = '127.0.0.1' }) {
  const agent = new Agent({ keepAlive: true });
  const server = createServer((req, res) => {
    const headers = { ...req.headers };
    const peer = (req.socket.remoteAddress ?? '').replace(/^::ffff:/, '');
    for (const name of PLATFORM_HEADERS) headers[name] = peer;
    const upstream = request({ agent, host: target.hostname, port: target.port, method: req.method, path: req.url, headers }, (answer) => {
      res.writeHead(answer.statusCode ?? 502, answer.headers);
      answer.pipe(res);
    });
    upstream.on('error', (error) => {
      if (!res.headersSent) res.writeHead(502, { 'content-type': 'text/plain' });
      res.end(`front proxy: ${error.message}\n`);
    });
    req.pipe(upstream);
  });
  await new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, resolve);
  });
  const { port: bound } = /** @type {import('node:net').AddressInfo} */ (server.address());
  return {
    url: `http://${host}:${bound}`,
    close: () =>
      new Promise((resolve) => {
        agent.destroy();
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
