// examples/next-proxy-redis end to end: a real production build (`next build`), served by `next start` on
// 127.0.0.1 behind the example's reverse proxy (which appends X-Forwarded-For as nginx does), its Next 16 proxy.ts
// on the Node runtime deciding through @sluice/redis (ioredis) on a real redis-server. Real HTTP; nothing mocked.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startFrontProxy, type FrontProxy } from '../../examples/next-proxy-redis/front-proxy.mjs';
import { startRedis, type RedisServer } from '../harness/redis.js';
import { buildApp, elapsedSeconds, exampleDir, startApp, type RunningApp } from './next-app.js';

const APP = exampleDir('next-proxy-redis');
// The example's rules: bursts of 4 with one token back every 15 s, and 1,000 per UTC day.
const CAPACITY = 4;
const TOKEN_S = 15;
const DAY_LIMIT = 1_000;
const POLICY = `"api/burst";q=${CAPACITY};w=${CAPACITY * TOKEN_S}, "api/day";q=${DAY_LIMIT};w=86400`;
const DAY_MS = 86_400_000;

let redis: RedisServer | undefined;
/** The test's own connection, to read what the app wrote. */
let reader: Redis | undefined;
let app: RunningApp | undefined;
let front: FrontProxy | undefined;
let buildMs = 0;

beforeAll(async () => {
  redis = await startRedis();
  reader = new Redis({ host: '127.0.0.1', port: redis.port, maxRetriesPerRequest: 1 });
  buildMs = (await buildApp(APP)).ms;
  app = await startApp(APP, { REDIS_URL: `redis://127.0.0.1:${redis.port}` });
  front = await startFrontProxy({ target: new URL(app.url) });
}, 240_000);

afterAll(async () => {
  await front?.close();
  await app?.stop();
  reader?.disconnect();
  await redis?.stop();
});

async function get(headers: Record<string, string> = {}) {
  const response = await fetch(`${front!.url}/api/hello`, { headers });
  return { status: response.status, headers: response.headers, body: (await response.json()) as Record<string, unknown> };
}

/** Seconds until the current UTC day's window ends, as the fixed window sees it from `now`. */
const dayLeft = (now: number): number => Math.ceil((Math.ceil((now + 1) / DAY_MS) * DAY_MS - now) / 1000);

/** `"api/burst";r=..;t=.., "api/day";r=..;t=..` → its four numbers. */
function parseRateLimit(value: string | null): [number, number, number, number] {
  const match = /^"api\/burst";r=(\d+);t=(\d+), "api\/day";r=(\d+);t=(\d+)$/.exec(value ?? '');
  expect(match, `RateLimit header: ${value}`).not.toBeNull();
  return [Number(match![1]), Number(match![2]), Number(match![3]), Number(match![4])];
}

/** A burst for one client: every answer's headers checked exactly (t within the burst's own duration). */
async function burst(headers: Record<string, string>): Promise<void> {
  const started = Date.now();
  for (let k = 1; k <= CAPACITY; k++) {
    const answer = await get(headers);
    expect(answer.status).toBe(200);
    expect(answer.body).toEqual({ hello: 'world' });
    expect(answer.headers.get('ratelimit-policy')).toBe(POLICY);
    const [burstLeft, burstT, dayRemaining, dayT] = parseRateLimit(answer.headers.get('ratelimit'));
    expect(burstLeft).toBe(CAPACITY - k);
    expect(burstT).toBeLessThanOrEqual(k * TOKEN_S);
    expect(burstT).toBeGreaterThanOrEqual(k * TOKEN_S - elapsedSeconds(started));
    expect(dayRemaining).toBe(DAY_LIMIT - k);
    // Redis TIME and this process read the same machine clock; a second either way covers the rounding.
    expect(Math.abs(dayT - dayLeft(Date.now()))).toBeLessThanOrEqual(1);
  }
  const refused = await get(headers);
  expect(refused.status).toBe(429);
  const retryAfter = Number(refused.headers.get('retry-after'));
  expect(retryAfter).toBeLessThanOrEqual(TOKEN_S);
  expect(retryAfter).toBeGreaterThanOrEqual(TOKEN_S - elapsedSeconds(started));
  expect(refused.headers.get('ratelimit-policy')).toBe(POLICY);
  const [burstLeft, burstT, dayRemaining, dayT] = parseRateLimit(refused.headers.get('ratelimit'));
  // All or nothing: the refused request took nothing from the daily rule either. And on a 429 no t exceeds
  // Retry-After, the day rule's included.
  expect([burstLeft, burstT, dayRemaining, dayT]).toEqual([0, retryAfter, DAY_LIMIT - CAPACITY, retryAfter]);
  expect(refused.headers.get('content-type')).toBe('application/problem+json');
  expect(refused.body).toMatchObject({
    type: 'https://iana.org/assignments/http-problem-types#quota-exceeded',
    status: 429,
    'violated-policies': ['api/burst'], // named like its RateLimit item
    retryAfterSeconds: retryAfter,
  });
}

describe('Next.js 16 proxy.ts on Redis (examples/next-proxy-redis), production build', () => {
  it('built proxy.ts for the Node runtime', () => {
    const functions = JSON.parse(readFileSync(join(APP, '.next/server/functions-config-manifest.json'), 'utf8')) as {
      functions: Record<string, { runtime: string; matchers: { originalSource: string }[] }>;
    };
    expect(functions.functions['/_middleware']?.runtime).toBe('nodejs');
    expect(functions.functions['/_middleware']!.matchers.map((m) => m.originalSource)).toEqual(['/api/:path*']);
    const edge = JSON.parse(readFileSync(join(APP, '.next/server/middleware-manifest.json'), 'utf8')) as { middleware: object };
    expect(edge.middleware).toEqual({});
    console.log(`next build of examples/next-proxy-redis: ${(buildMs / 1000).toFixed(1)} s`);
  });

  it('anonymous clients: 4 allowed, then 429 with both rules in exact RateLimit headers, Retry-After and problem+json', async () => {
    await burst({});
  });

  it('behind the reverse proxy, a client rotating X-Forwarded-For or made-up API keys stays in its bucket', async () => {
    const attempts: Record<string, string>[] = [];
    for (let i = 1; i <= 4; i++)
      attempts.push(
        { 'x-forwarded-for': `198.51.100.${i}` },
        { 'x-forwarded-for': `203.0.113.${i}, 10.0.0.${i}` },
        { authorization: `Bearer made-up-${i}` },
      );
    const statuses = [];
    for (const headers of attempts) statuses.push((await get(headers)).status);
    expect(statuses).toEqual(attempts.map(() => 429));
  });

  it('a verified API key is its own bucket', async () => {
    await burst({ authorization: 'Bearer demo-key-alice' });
  });

  it("onLimited's background work (XADD on waitUntil, Node runtime) ran once for every refusal", async () => {
    // 1 refusal in the anonymous burst + 12 rotation attempts; 1 in alice's burst. The work runs after the
    // response, so give it a moment.
    const deadline = Date.now() + 5_000;
    let entries: [string, string[]][] = [];
    while (Date.now() < deadline) {
      entries = await reader!.xrange('sluice:limited', '-', '+');
      if (entries.length >= 14) break;
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    const seen = entries.map(([, fields]) => fields.join(' '));
    expect(seen).toEqual([...Array<string>(13).fill('identity ip:127.0.0.1 rule burst'), 'identity user:alice rule burst']);
  });

  it('the counters live in Redis, under the identity the proxy resolved', async () => {
    const keys = await reader!.keys('sluice:api:*');
    expect(keys.sort()).toEqual([
      'sluice:api:{ip:127.0.0.1}:burst',
      'sluice:api:{ip:127.0.0.1}:day',
      'sluice:api:{user:alice}:burst',
      'sluice:api:{user:alice}:day',
    ]);
  });
});
