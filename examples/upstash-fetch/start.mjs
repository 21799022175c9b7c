#!/usr/bin/env node
// One command, `pnpm start` (or `node start.mjs`): starts a throwaway redis-server and the local Upstash REST
// fixture in front of it, serves handler.mjs on a local HTTP server, sends a bounded burst from two clients,
// prints what each request got and how many Upstash requests it cost, then stops everything and exits.
import { createServer } from 'node:http';
import { startFixtureProcess } from '../../test/harness/upstash-fixture-process.mjs';

const fixture = await startFixtureProcess({ loader: import.meta.resolve('tsx') });
let server;
try {
  // What a serverless platform would provide: the database URL and token in the environment.
  process.env.UPSTASH_REDIS_REST_URL = fixture.url;
  process.env.UPSTASH_REDIS_REST_TOKEN = fixture.token;
  const { default: handler } = await import('./handler.mjs');

  server = createServer((req, res) => {
    const request = new Request(new URL(req.url, 'http://127.0.0.1'), { method: req.method, headers: req.headers });
    handler
      .fetch(request)
      .then(async (response) => {
        res.writeHead(response.status, Object.fromEntries(response.headers));
        res.end(Buffer.from(await response.arrayBuffer()));
      })
      .catch((error) => {
        res.writeHead(500).end(String(error));
      });
  });
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  const base = `http://127.0.0.1:${server.address().port}`;
  console.log(`handler on ${base}, Upstash REST fixture on ${fixture.url} (redis-server on port ${fixture.redisPort})\n`);

  // Warm the script cache (the first decision of a fresh database costs EVALSHA + EVAL), then count.
  await fetch(`${base}/`, { headers: { 'x-client-id': 'warmup' } });
  await fixture.reset();

  const burst = [...Array(10).fill('alice'), ...Array(3).fill('bob')];
  console.log('  #  client  status  remaining  deciding rule  retry-after (s)');
  let allowed = 0;
  for (const [i, client] of burst.entries()) {
    const response = await fetch(`${base}/hello`, { headers: { 'x-client-id': client } });
    const body = await response.json();
    if (response.ok) allowed++;
    const remaining = response.headers.get('ratelimit-remaining') ?? '-';
    const retryAfter = response.headers.get('retry-after') ?? '-';
    console.log(
      `${String(i + 1).padStart(3)}  ${client.padEnd(6)}  ${String(response.status).padEnd(6)}  ${remaining.padEnd(9)}  ${body.rule.padEnd(13)}  ${retryAfter}`,
    );
  }
  const stats = await fixture.stats();
  console.log(`\n${allowed} of ${burst.length} requests allowed (alice: a burst of 5, then 1 per second; bob: untouched by alice).`);
  console.log(`Upstash REST requests: ${stats.requests} for ${burst.length} decisions (${stats.byCommand.evalsha ?? 0} EVALSHA).`);
} finally {
  server?.close();
  await fixture.stop();
}
