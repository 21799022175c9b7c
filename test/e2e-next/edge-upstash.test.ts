// examples/next-edge-upstash end to end: a real production build (`next build`), served by `next start` on
// 127.0.0.1 behind the example's stand-in for Vercel's edge, its middleware on the edge runtime deciding through
// @sluice/upstash against the Upstash REST fixture over a real redis-server. Real HTTP all the way; nothing mocked.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { startFrontProxy, type FrontProxy } from '../../examples/next-edge-upstash/front-proxy.mjs';
import { rawCommand, startRedis, type RedisServer } from '../harness/redis.js';
import { startUpstashFixture, type UpstashFixture } from '../harness/upstash-fixture.js';
import { buildApp, elapsedSeconds, exampleDir, startApp, type RunningApp } from './next-app.js';

const APP = exampleDir('next-edge-upstash');
// The example's rule: bursts of 5, one token back every 20 s (so a full bucket takes 100 s).
const CAPACITY = 5;
const TOKEN_S = 20;

let redis: RedisServer | undefined;
let fixture: UpstashFixture | undefined;
let app: RunningApp | undefined;
let front: FrontProxy | undefined;
let buildMs = 0;

beforeAll(async () => {
  redis = await startRedis();
  fixture = await startUpstashFixture({ redisPort: redis.port });
  // Built without the Upstash variables: the middleware must read them at run time, not have them baked in.
  buildMs = (await buildApp(APP)).ms;
  app = await startApp(APP, { UPSTASH_REDIS_REST_URL: fixture.url, UPSTASH_REDIS_REST_TOKEN: fixture.token });
  front = await startFrontProxy({ target: new URL(app.url) });
}, 240_000);

// Each test starts from an empty database and zeroed fixture counters, so none counts what another did and each
// passes alone (`-t <name>`) or in any order. A test that makes refusals waits for their background work
// (onLimited's ZINCRBY) to land before it ends, so none is still in flight when the next starts.
beforeEach(async () => {
  expect(await rawCommand(redis!.port, 'FLUSHDB')).toBe('+OK\r\n');
  fixture!.resetStats();
});

afterAll(async () => {
  await front?.close();
  await app?.stop();
  await fixture?.close();
  await redis?.stop();
});

interface Answer {
  status: number;
  headers: Headers;
  body: Record<string, unknown>;
}

async function get(headers: Record<string, string> = {}, path = '/api/hello'): Promise<Answer> {
  const response = await fetch(`${front!.url}${path}`, { headers });
  const text = await response.text();
  return {
    status: response.status,
    headers: response.headers,
    body: text.startsWith('{') ? (JSON.parse(text) as Record<string, unknown>) : { text },
  };
}

/** Waits for onLimited's background work: the ZINCRBY counts of `sluice:limited` must reach `expected` exactly. */
async function expectLimitedCounts(expected: Record<string, string>): Promise<void> {
  // The work runs after the response is sent, so give it a moment.
  const deadline = Date.now() + 5_000;
  let scores: Record<string, string> = {};
  while (Date.now() < deadline) {
    scores = {};
    for (const member of Object.keys(expected)) {
      const reply = await rawCommand(redis!.port, `ZSCORE sluice:limited ${member}`);
      scores[member] = reply.split('\r\n')[1] ?? '';
    }
    if (JSON.stringify(scores) === JSON.stringify(expected)) break;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  expect(scores).toEqual(expected);
}

/** Spends a client's whole bucket: `CAPACITY` requests, each allowed. */
async function drain(headers: Record<string, string>): Promise<void> {
  for (let k = 1; k <= CAPACITY; k++) expect((await get(headers)).status).toBe(200);
}

/** Sends a burst for one client and checks every answer's headers exactly (t within the burst's own duration). */
async function burst(headers: Record<string, string>, identity: string): Promise<void> {
  const started = Date.now();
  for (let k = 1; k <= CAPACITY; k++) {
    const answer = await get(headers);
    expect(answer.status).toBe(200);
    expect(answer.body).toEqual({ hello: 'world', identity });
    expect(answer.headers.get('ratelimit-policy')).toBe(`"api";q=${CAPACITY};w=${CAPACITY * TOKEN_S}`);
    // Full again k tokens × 20 s after the first request, as seen from this request.
    const t = Number(/^"api";r=(\d+);t=(\d+)$/.exec(answer.headers.get('ratelimit') ?? '')?.[2]);
    expect(answer.headers.get('ratelimit')).toBe(`"api";r=${CAPACITY - k};t=${t}`);
    expect(t).toBeLessThanOrEqual(k * TOKEN_S);
    expect(t).toBeGreaterThanOrEqual(k * TOKEN_S - elapsedSeconds(started));
  }
  const refused = await get(headers);
  expect(refused.status).toBe(429);
  const retryAfter = Number(refused.headers.get('retry-after'));
  expect(retryAfter).toBeLessThanOrEqual(TOKEN_S);
  expect(retryAfter).toBeGreaterThanOrEqual(TOKEN_S - elapsedSeconds(started));
  expect(refused.headers.get('ratelimit-policy')).toBe(`"api";q=${CAPACITY};w=${CAPACITY * TOKEN_S}`);
  expect(refused.headers.get('ratelimit')).toBe(`"api";r=0;t=${retryAfter}`);
  expect(refused.headers.get('content-type')).toBe('application/problem+json');
  expect(refused.body).toEqual({
    type: 'https://iana.org/assignments/http-problem-types#quota-exceeded',
    title: 'Too Many Requests',
    status: 429,
    detail: `You have used up the rate limit of policy "api" (5 units per 100 seconds). Retry after ${retryAfter} seconds. The RateLimit response header shows what is left.`,
    'violated-policies': ['api'],
    retryAfterSeconds: retryAfter,
  });
}

describe('Next.js edge middleware on Upstash (examples/next-edge-upstash), production build; each test passes alone', () => {
  it('built the middleware for the edge runtime, with @sluice/next inside its edge bundle', () => {
    const manifest = JSON.parse(readFileSync(join(APP, '.next/server/middleware-manifest.json'), 'utf8')) as {
      middleware: Record<string, { files: string[]; matchers: { originalSource: string }[] }>;
    };
    const middleware = manifest.middleware['/'];
    expect(middleware?.matchers.map((m) => m.originalSource)).toEqual(['/api/:path*']);
    expect(middleware!.files.every((file) => file.startsWith('server/edge/'))).toBe(true);
    const code = middleware!.files.map((file) => readFileSync(join(APP, '.next', file), 'utf8')).join('\n');
    expect(code).toContain('waitUntil refused the background work'); // a string only @sluice/next has
    console.log(`next build of examples/next-edge-upstash: ${(buildMs / 1000).toFixed(1)} s`);
  });

  it('anonymous clients: 5 allowed, then 429 with exact RateLimit, Retry-After and problem+json', async () => {
    await burst({}, 'ip:127.0.0.1');
    await expectLimitedCounts({ 'ip:127.0.0.1': '1' });
  });

  it('a client rotating X-Forwarded-For, x-vercel-forwarded-for, x-real-ip or made-up API keys stays in its bucket', async () => {
    await drain({});
    const attempts: Record<string, string>[] = [];
    for (let i = 1; i <= 4; i++) {
      const fake = `198.51.100.${i}`;
      attempts.push(
        { 'x-forwarded-for': fake },
        { 'x-vercel-forwarded-for': fake, 'x-real-ip': fake },
        { authorization: `Bearer made-up-${i}` },
      );
    }
    const statuses = [];
    for (const headers of attempts) statuses.push((await get(headers)).status);
    expect(statuses).toEqual(attempts.map(() => 429));
    // Every refusal was counted against the one real client, none against a made-up identity.
    await expectLimitedCounts({ 'ip:127.0.0.1': String(attempts.length) });
  });

  it('a verified API key is its own bucket, and the route learns whom the limit counted', async () => {
    await drain({});
    await burst({ authorization: 'Bearer demo-key-alice' }, 'user:alice');
    await expectLimitedCounts({ 'user:alice': '1' });
  });

  it('one Upstash REST request per decision, made from the edge runtime', async () => {
    // A fresh edge instance's first decision also loads the script (EVALSHA, NOSCRIPT, then the script): warm it
    // with another client first, so this test counts steady-state decisions whether it runs alone or after others.
    expect((await get({ authorization: 'Bearer demo-key-alice' })).status).toBe(200);
    fixture!.resetStats();
    for (let i = 0; i < 3; i++) expect((await get({ authorization: 'Bearer demo-key-bob' })).status).toBe(200);
    expect(fixture!.stats.byCommand.evalsha).toBe(3);
    expect(fixture!.stats.requests).toBe(3);
  });

  it("onLimited's background work (ZINCRBY on waitUntil) ran for every refusal", async () => {
    await drain({});
    for (let i = 0; i < 3; i++) expect((await get({})).status).toBe(429);
    await drain({ authorization: 'Bearer demo-key-bob' });
    expect((await get({ authorization: 'Bearer demo-key-bob' })).status).toBe(429);
    await expectLimitedCounts({ 'ip:127.0.0.1': '3', 'user:bob': '1' });
  });

  it('pages outside the matcher are not limited and carry no RateLimit headers', async () => {
    const page = await fetch(`${front!.url}/`);
    expect(page.status).toBe(200);
    expect(page.headers.get('ratelimit')).toBeNull();
    expect(await page.text()).toContain('sluice + Next.js edge middleware');
  });
});
