// The other stores in Next.js edge middleware: a test app (fixtures/edge-stores) with one limiter per store, the
// memory store, the Upstash store on its own REST client ({ url, token }: no @upstash/redis) and the tiered store's
// deny cache in front of that, built by a real `next build` for the edge runtime and served by `next start` on
// 127.0.0.1, the Upstash REST fixture over a real redis-server behind it. Real HTTP all the way; nothing mocked.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startRedis, type RedisServer } from '../harness/redis.js';
import { startUpstashFixture, type UpstashFixture } from '../harness/upstash-fixture.js';
import { buildApp, startApp, type RunningApp } from './next-app.js';

const APP = new URL('fixtures/edge-stores', import.meta.url).pathname;
const CAPACITY = 5; // the app's rule: a token bucket of 5, one token back per hour

let redis: RedisServer | undefined;
let fixture: UpstashFixture | undefined;
let app: RunningApp | undefined;

beforeAll(async () => {
  redis = await startRedis();
  fixture = await startUpstashFixture({ redisPort: redis.port });
  await buildApp(APP);
  app = await startApp(APP, { UPSTASH_REDIS_REST_URL: fixture.url, UPSTASH_REDIS_REST_TOKEN: fixture.token });
}, 240_000);

afterAll(async () => {
  await app?.stop();
  await fixture?.close();
  await redis?.stop();
});

const get = (store: string, user: string) => fetch(`${app!.url}/api/${store}/hello`, { headers: { 'x-user': user } });

/** CAPACITY allowed with remaining counting down, then 429s with a problem body; returns the statuses. */
async function burst(store: string, user: string, extra = 2): Promise<void> {
  for (let k = 1; k <= CAPACITY; k++) {
    const response = await get(store, user);
    expect(response.status).toBe(200);
    expect(await response.json()).toEqual({ store, identity: `user:${user}` });
    expect(response.headers.get('ratelimit')).toMatch(new RegExp(`^"${store}";r=${CAPACITY - k};t=\\d+$`));
  }
  for (let k = 0; k < extra; k++) {
    const refused = await get(store, user);
    expect(refused.status).toBe(429);
    expect(refused.headers.get('content-type')).toBe('application/problem+json');
    expect(Number(refused.headers.get('retry-after'))).toBeGreaterThan(0);
    await refused.arrayBuffer();
  }
}

describe('Next.js edge middleware on the memory, own-REST-client Upstash and tiered stores (production build)', () => {
  it('built the middleware for the edge runtime, with the three stores inside its edge bundle and no @upstash/redis', () => {
    const manifest = JSON.parse(readFileSync(join(APP, '.next/server/middleware-manifest.json'), 'utf8')) as {
      middleware: Record<string, { files: string[] }>;
    };
    const files = manifest.middleware['/']!.files;
    expect(files.every((file) => file.startsWith('server/edge/'))).toBe(true);
    const code = files.map((file) => readFileSync(join(APP, '.next', file), 'utf8')).join('\n');
    // Strings only those packages have (checked as booleans: the bundle is too large to print on a failure).
    expect(code.includes('upstashRest: url must be'), 'the own REST client').toBe(true);
    expect(code.includes('the remote store does not run leases'), '@sluice/tiered').toBe(true);
    // @upstash/redis asks for base64 answers with an Upstash-Encoding header; the own client never sends it.
    expect(/upstash-encoding/i.test(code), 'no @upstash/redis').toBe(false);
  });

  it('memory: 5 allowed, then 429, counted in the edge instance; another client has its own bucket', async () => {
    fixture!.resetStats();
    await burst('memory', 'm-alice');
    await burst('memory', 'm-bob');
    expect(fixture!.stats.requests).toBe(0); // nothing left the instance
  });

  it('Upstash on the own REST client: 5 allowed, then 429, one EVALSHA per decision from the edge runtime', async () => {
    expect((await get('rest', 'r-warm')).status).toBe(200); // the instance's first call may also load the script
    fixture!.resetStats();
    await burst('rest', 'r-alice');
    expect(fixture!.stats.byCommand.evalsha).toBe(CAPACITY + 2);
    expect(fixture!.stats.requests).toBe(CAPACITY + 2);
  });

  it('tiered (deny cache) over it: exact, and once refused a client is answered in the instance until retryAt', async () => {
    expect((await get('tiered', 't-warm')).status).toBe(200);
    fixture!.resetStats();
    await burst('tiered', 't-alice', 1);
    const remote = fixture!.stats.requests;
    expect(remote).toBe(CAPACITY + 1); // the refusal itself came from Upstash
    for (let i = 0; i < 5; i++) expect((await get('tiered', 't-alice')).status).toBe(429);
    expect(fixture!.stats.requests).toBe(remote); // the replays did not
    expect((await get('tiered', 't-bob')).status).toBe(200);
  });
});
