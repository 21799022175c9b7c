// Plays a reverse proxy in front of `next start`, locally, as nginx does with
// `proxy_set_header X-Forwarded-For $proxy_add_x_forwarded_for`: every request is forwarded with the TCP peer's
// address appended to X-Forwarded-For. Whatever a client writes there ends up left of that entry, where
// `clientIp: { trustProxy: 1 }` never looks. Next.js itself listens on loopback only, behind this proxy.
import { Agent, createServer, request } from 'node:http';

/**
 * @param {{ target: URL, port?: number, host?: string }} options  target: where `next start` listens
 * @returns {Promise<{ url: string, close(): Promise<void> }>}
 */
export async function startFrontProxy({ target, port = 0, host = '127.0.0.1' }) {
  const agent = new Agent({ keepAlive: true });
  const server = createServer((req, res) => {
    const headers = { ...req.headers };
    const peer = (req.socket.remoteAddress ?? '').replace(/^::ffff:/, '');
    const chain = req.headers['x-forwarded-for'];
    headers['x-forwarded-for'] = chain === undefined || chain === '' ? peer : `${chain}, ${peer}`;
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
