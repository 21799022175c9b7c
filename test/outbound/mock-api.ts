/**
 * A mock third party for the outbound suite (calls to a rate-limited third party, as in the article 'Rate limiting
 * with Redis'): an HTTP server on 127.0.0.1 that allows `limit` requests in any sliding second on its own clock (a
 * request is answered while fewer than `limit` answered requests arrived in the 1000 ms up to it; refusals do not
 * count), and answers 429 with `Retry-After` (whole seconds until one more fits, at least 1) past it. With
 * `statesLimit(true)` every answer also carries `X-RateLimit-Limit` (the limit in force) and `X-RateLimit-Remaining`;
 * without, a 429 says only `Retry-After`: a bare 429. It records every request: arrival time, status, the limit in
 * force. `setLimit(limit, fromMs)` changes the limit from that instant (epoch ms) on: the mid-run drop.
 */
import { createServer, type Server } from 'node:http';

export interface MockRequest {
  /** Arrival, epoch ms (the mock's clock). */
  readonly at: number;
  readonly status: 200 | 429;
  /** The limit in force when it arrived. */
  readonly limit: number;
}

export interface MockApi {
  readonly url: string;
  readonly requests: readonly MockRequest[];
  /** The limit from the instant `fromMs` (epoch ms) on; from now when omitted. */
  setLimit(limit: number, fromMs?: number): void;
  /** Whether answers carry X-RateLimit-Limit and -Remaining (they do not at first). */
  statesLimit(states: boolean): void;
  /** Forgets the recorded requests, the answered ones in the sliding second and any limit change (between runs). */
  clear(): void;
  close(): Promise<void>;
}

export async function startMockApi(initialLimit: number): Promise<MockApi> {
  let changes: Array<{ from: number; limit: number }> = [{ from: 0, limit: initialLimit }];
  const limitAt = (at: number) => changes.filter((c) => c.from <= at).at(-1)!.limit;
  let requests: MockRequest[] = [];
  let stating = false;
  /** Arrival times of the answered requests in the last second, oldest first. */
  let answered: number[] = [];
  const server: Server = createServer((req, res) => {
    const at = Date.now();
    const limit = limitAt(at);
    let expired = 0;
    while (expired < answered.length && answered[expired]! <= at - 1000) expired++;
    if (expired > 0) answered.splice(0, expired);
    const allowed = answered.length < limit;
    if (allowed) answered.push(at);
    requests.push({ at, status: allowed ? 200 : 429, limit });
    const stated: Record<string, string> = stating
      ? { 'x-ratelimit-limit': String(limit), 'x-ratelimit-remaining': String(Math.max(0, limit - answered.length)) }
      : {};
    req.resume();
    if (allowed) {
      res.writeHead(200, { 'content-type': 'text/plain', ...stated });
      res.end('ok');
    } else {
      // The oldest of the `limit` newest answered requests must leave the second before one more fits.
      const oldest = answered[answered.length - limit] ?? at;
      const retryAfter = Math.max(1, Math.ceil((oldest + 1000 - at) / 1000));
      res.writeHead(429, { 'content-type': 'text/plain', ...stated, 'retry-after': String(retryAfter) });
      res.end('too many requests');
    }
  });
  server.keepAliveTimeout = 30_000;
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => resolve());
  });
  const address = server.address();
  const port = typeof address === 'object' && address !== null ? address.port : 0;
  return {
    url: `http://127.0.0.1:${port}`,
    get requests() {
      return requests;
    },
    setLimit(next: number, fromMs = Date.now()) {
      changes = [...changes.filter((c) => c.from < fromMs), { from: fromMs, limit: next }];
    },
    statesLimit(states: boolean) {
      stating = states;
    },
    clear() {
      changes = [{ from: 0, limit: initialLimit }];
      requests = [];
      answered = [];
      stating = false;
    },
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

/** The most requests that arrived in any sliding second (the 1000 ms up to and including an arrival) among `times`. */
export function maxInSlidingSecond(times: readonly number[]): number {
  let most = 0;
  for (let i = 0, from = 0; i < times.length; i++) {
    while (times[from]! <= times[i]! - 1000) from++;
    most = Math.max(most, i - from + 1);
  }
  return most;
}
