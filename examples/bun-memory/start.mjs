// One command, `pnpm start` (or `bun start.mjs`): serves a route with Bun.serve on 127.0.0.1, limited by
// @sluice/http's web handler over the in-memory store, sends it seven requests as one client, prints what each got
// and the first 429 in full, then stops the server and exits.
/* global Bun */
import { createLimiter, tokenBucket } from '@sluice/core';
import { applyHeaders, createHandler, toResponse } from '@sluice/http';
import { memoryStore } from '@sluice/memory';

// Bursts of 5, then 1 more every 10 s: the sixth request within a few seconds is refused.
const limiter = createLimiter({ store: memoryStore(), name: 'api', rules: [tokenBucket({ capacity: 5, refillRate: 1, interval: '10s' })] });
// The client is its API key when it sends one, else its address. Bun gives the peer address per request
// (server.requestIP), and it is the only address trusted by default: X-Forwarded-For is ignored unless configured.
const rateLimit = createHandler({ limiter, identify: (request) => request.headers.get('x-api-key') });

const server = Bun.serve({
  hostname: '127.0.0.1',
  port: 0,
  async fetch(request, bunServer) {
    const result = await rateLimit.handle({ headers: request.headers, remoteAddress: bunServer.requestIP(request)?.address }, request);
    if (!result.allowed) return toResponse(result); // 429, problem+json, RateLimit and Retry-After headers
    const response = Response.json({ hello: result.identity });
    applyHeaders(result.headers, response.headers); // RateLimit headers on the route's own answer too
    return response;
  },
});

try {
  console.log(`Bun ${Bun.version}: Bun.serve on ${server.url.origin}, @sluice/memory, "api": bursts of 5, then 1 every 10 s\n`);
  console.log('  #  status  RateLimit');
  let firstRefusal;
  let allowed = 0;
  for (let i = 1; i <= 7; i++) {
    const response = await fetch(new URL('/hello', server.url), { headers: { 'x-api-key': 'demo-key' } });
    const body = await response.text();
    if (response.ok) allowed++;
    else firstRefusal ??= { response, body };
    console.log(`  ${i}  ${String(response.status).padEnd(6)}  ${response.headers.get('ratelimit')}`);
  }
  if (firstRefusal !== undefined) {
    const { response, body } = firstRefusal;
    console.log(`\nHTTP ${response.status} ${response.statusText}`);
    for (const name of ['content-type', 'ratelimit-policy', 'ratelimit', 'retry-after'])
      console.log(`  ${name}: ${response.headers.get(name)}`);
    console.log(`  ${body}`);
  }
  console.log(`\n${allowed} of 7 allowed for user:demo-key; the server stops and the process exits.`);
} finally {
  await server.stop(true);
}
