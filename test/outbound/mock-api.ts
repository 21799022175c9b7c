/**
 * A mock third party for the outbound suite (calls to a rate-limited third party, as in the article 'Rate limiting
 * with Redis'): an HTTP server on 127.0.0.1 that enforces its own limit in fixed 1 s windows on its own clock (the
 * window of a request is floor(Date.now() / 1000)), answers 429 with `Retry-After` (whole seconds to the window's
 * end, rounded up, as real APIs send it) past the limit, and every answer with `X-RateLimit-Limit`,
 * `X-RateLimit-Remaining` and `X-RateLimit-Reset` (epoch seconds of the window's end, with milliseconds). It records
 * every request: arrival time, window, status. `setLimit(limit, fromSecond)` changes the limit from that window on
 * (the mid-run drop of the second test), so no window has two limits. `statesLimit(false)` leaves the X-RateLimit-*
 * headers out: a 429 then says only `Retry-After` (the third test).
 */
import { createServer, type Server } from 'node:http';

export interface MockRequest {
  /** Arrival, epoch ms (the mock's clock). */
  readonly at: number;
  /** The mock's second: floor(at / 1000). */
  readonly second: number;
  readonly status: 200 | 429;
  /** The limit in force when it arrived. */
  readonly limit: number;
}

export interface MockApi {
  readonly url: string;
  readonly requests: readonly MockRequest[];
  /** The limit from window `fromSecond` (epoch seconds) on; from the current window when omitted. */
  setLimit(limit: number, fromSecond?: number): void;
  /** Whether answers carry X-RateLimit-Limit, -Remaining and -Reset (they do at first). */
  statesLimit(states: boolean): void;
  /** Forgets the recorded requests and window counts (between runs). */
  clear(): void;
  close(): Promise<void>;
}

export async function startMockApi(initialLimit: number): Promise<MockApi> {
  let changes: Array<{ from: number; limit: number }> = [{ from: 0, limit: initialLimit }];
  const limitAt = (second: number) => changes.filter((c) => c.from <= second).at(-1)!.limit;
  let requests: MockRequest[] = [];
  let stating = true;
  const served = new Map<number, number>();
  const server: Server = createServer((req, res) => {
    const at = Date.now();
    const second = Math.floor(at / 1000);
    const used = served.get(second) ?? 0;
    const limit = limitAt(second);
    const resetAt = (second + 1) * 1000;
    const stated = (remaining: number): Record<string, string> =>
      stating
        ? {
            'x-ratelimit-limit': String(limit),
            'x-ratelimit-remaining': String(remaining),
            'x-ratelimit-reset': (resetAt / 1000).toFixed(3),
          }
        : {};
    req.resume();
    if (used < limit) {
      served.set(second, used + 1);
      requests.push({ at, second, status: 200, limit });
      res.writeHead(200, { 'content-type': 'text/plain', ...stated(limit - used - 1) });
      res.end('ok');
    } else {
      requests.push({ at, second, status: 429, limit });
      res.writeHead(429, { 'content-type': 'text/plain', ...stated(0), 'retry-after': String(Math.ceil((resetAt - at) / 1000)) });
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
    setLimit(next: number, fromSecond = Math.floor(Date.now() / 1000)) {
      changes = [...changes.filter((c) => c.from < fromSecond), { from: fromSecond, limit: next }];
    },
    statesLimit(states: boolean) {
      stating = states;
    },
    clear() {
      changes = [{ from: 0, limit: initialLimit }];
      requests = [];
      served.clear();
    },
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
