// The fleet's front door: a small round-robin HTTP proxy on 127.0.0.1, as a load balancer would be. Request n goes to
// upstream n mod 4, over kept-alive connections; an upstream that fails answers 502.
import { Agent, createServer, request } from 'node:http';

/**
 * @param {number[]} upstreamPorts  the app processes, on 127.0.0.1
 * @returns {Promise<{ port: number, forwarded: number[], failed: number, close(): Promise<void> }>}
 */
export async function startProxy(upstreamPorts) {
  const agent = new Agent({ keepAlive: true, maxSockets: 64 });
  const state = { forwarded: upstreamPorts.map(() => 0), failed: 0 };
  let next = 0;
  const server = createServer((req, res) => {
    const i = next;
    next = (next + 1) % upstreamPorts.length;
    state.forwarded[i]++;
    const upstream = request(
      { host: '127.0.0.1', port: upstreamPorts[i], method: req.method, path: req.url, headers: req.headers, agent },
      (answer) => {
        res.writeHead(answer.statusCode ?? 502, answer.headers);
        answer.pipe(res);
      },
    );
    upstream.once('error', (error) => {
      state.failed++;
      if (!res.headersSent) res.writeHead(502, { 'content-type': 'text/plain' });
      res.end(`upstream ${i + 1} failed: ${error.message}\n`);
    });
    req.pipe(upstream);
  });
  server.keepAliveTimeout = 2000;
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    port: server.address().port,
    get forwarded() {
      return [...state.forwarded];
    },
    get failed() {
      return state.failed;
    },
    close: async () => {
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
      agent.destroy();
    },
  };
}
