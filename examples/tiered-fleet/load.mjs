// The load generator: `concurrency` clients send GET / to the proxy back to back, each request naming its identity
// in x-client-id. Every 25th request is one of the cold identities (in turn), the rest are the hot one. Bounded by
// count and by time, whichever comes first.
import { Agent, request } from 'node:http';

/**
 * @param {{ port: number, hot: string, cold: string[], until: number, maxRequests: number, concurrency: number }} options
 *   until: epoch ms after which no new request starts
 * @returns {Promise<{ sent: number, statuses: Map<string, Map<number, number>>, errors: number }>}
 */
export async function runLoad({ port, hot, cold, until, maxRequests, concurrency }) {
  const agent = new Agent({ keepAlive: true, maxSockets: concurrency });
  const statuses = new Map();
  let sent = 0;
  let errors = 0;

  const send = (identity) =>
    new Promise((resolve) => {
      const req = request({ host: '127.0.0.1', port, path: '/', headers: { 'x-client-id': identity }, agent }, (res) => {
        res.resume();
        res.once('end', () => resolve(res.statusCode));
      });
      req.once('error', () => resolve(0));
      req.end();
    });

  const client = async () => {
    while (sent < maxRequests && Date.now() < until) {
      const n = sent++;
      const identity = n % 25 === 24 ? cold[Math.floor(n / 25) % cold.length] : hot;
      const status = await send(identity);
      if (status === 0) errors++;
      const byStatus = statuses.get(identity) ?? new Map();
      statuses.set(identity, byStatus);
      byStatus.set(status, (byStatus.get(status) ?? 0) + 1);
    }
  };
  await Promise.all(Array.from({ length: concurrency }, client));
  agent.destroy();
  return { sent, statuses, errors };
}
