/**
 * What a user relies on from @sluice/http behind a runtime's own server, checked over real HTTP against the
 * fixture app (fixtures/app.mjs: `/<store>/hello`, one limiter per store named after it: a fixed window of LIMIT per hour).
 * Shared by the Bun and Deno suites so both runtimes are held to the same answers.
 */
import { randomUUID } from 'node:crypto';
import { describe, expect, it } from 'vitest';

/** fixtures/app.mjs's limit (each suite checks it against the one the server reports). */
export const LIMIT = 10;

/** The stores the Bun and Deno servers (fixtures/bun-server.mjs, fixtures/deno-server.mjs) serve, by route. */
export const STORES = ['memory', 'upstash', 'upstash-rest', 'redis', 'tiered'];

/**
 * The three checks for every store, on a runtime's server: `server` names it (`'Bun.serve'`), `peer` says where it
 * reports the peer address (`'server.requestIP'`), `base` is its URL once started.
 */
export function describeStores(server: string, peer: string, base: () => string): void {
  describe.each(STORES)(`${server} with the %s store`, (store) => {
    it('allows the limit, then answers 429 with RateLimit headers, Retry-After and a problem+json body', async () => {
      await refusesOverTheLimit(base(), store);
    });

    it('counts exactly under concurrent requests', async () => {
      await countsExactlyUnderConcurrency(base(), store);
    });

    it(`identifies an anonymous client by the peer address the runtime reports (${peer})`, async () => {
      await identifiesByPeerAddress(base(), store);
    });
  });
}

const PROBLEM = 'https://iana.org/assignments/http-problem-types#quota-exceeded';

function user(store: string): string {
  return `${store}-${randomUUID()}`;
}

function hello(base: string, store: string, who: string | undefined): Promise<Response> {
  return fetch(`${base}/${store}/hello`, { headers: who === undefined ? {} : { 'x-user': who } });
}

/** LIMIT requests in a row are allowed with a falling RateLimit count, then a 429 problem+json with its headers. */
export async function refusesOverTheLimit(base: string, store: string): Promise<void> {
  const who = user(store);
  // One rule: the policy item is named after the limiter (the store's name in the app).
  const policy = `"${store}";q=${LIMIT};w=3600`;
  for (let i = 0; i < LIMIT; i++) {
    const response = await hello(base, store, who);
    expect(response.status).toBe(200);
    expect(await response.json()).toEqual({ ok: true, store, identity: `user:${who}`, degraded: false });
    expect(response.headers.get('ratelimit-policy')).toBe(policy);
    const rateLimit = new RegExp(`^"${store}";r=${LIMIT - 1 - i};t=(\\d+)$`).exec(response.headers.get('ratelimit') ?? '');
    expect(rateLimit, `request ${i + 1}: RateLimit ${response.headers.get('ratelimit')}`).not.toBeNull();
    expect(Number(rateLimit![1])).toBeLessThanOrEqual(3600);
  }
  const refused = await hello(base, store, who);
  expect(refused.status).toBe(429);
  expect(refused.headers.get('content-type')).toMatch(/^application\/problem\+json/);
  expect(refused.headers.get('ratelimit-policy')).toBe(policy);
  const rateLimit = new RegExp(`^"${store}";r=0;t=(\\d+)$`).exec(refused.headers.get('ratelimit') ?? '');
  expect(rateLimit, `RateLimit ${refused.headers.get('ratelimit')}`).not.toBeNull();
  const retryAfter = Number(refused.headers.get('retry-after'));
  expect(retryAfter).toBeGreaterThanOrEqual(1);
  expect(retryAfter).toBeLessThanOrEqual(3600);
  expect(Number(rateLimit![1])).toBeLessThanOrEqual(retryAfter);
  expect(await refused.json()).toMatchObject({ type: PROBLEM, title: 'Too Many Requests', status: 429 });
}

/**
 * `burst` requests at once for one identity: exactly LIMIT are allowed, and their RateLimit counts are LIMIT-1
 * down to 0, each once; a lost update would allow more, or show one count twice.
 */
export async function countsExactlyUnderConcurrency(base: string, store: string, burst = 4 * LIMIT): Promise<void> {
  const who = user(store);
  const responses = await Promise.all(Array.from({ length: burst }, () => hello(base, store, who)));
  const bodies = await Promise.all(responses.map((r) => r.text()));
  // A degraded decision (the store failed or timed out, and the limiter failed open) is not a count at all.
  const degraded = bodies.filter((body) => body.includes('"degraded":true'));
  expect(degraded, 'decisions answered by the failure policy instead of the store').toEqual([]);
  const statuses = responses.map((r) => r.status);
  expect(statuses.filter((s) => s === 200)).toHaveLength(LIMIT);
  expect(statuses.filter((s) => s === 429)).toHaveLength(burst - LIMIT);
  const remaining = responses
    .filter((r) => r.status === 200)
    .map((r) => Number(/;r=(\d+);/.exec(r.headers.get('ratelimit') ?? '')?.[1]))
    .sort((a, b) => a - b);
  expect(remaining).toEqual(Array.from({ length: LIMIT }, (_, i) => i));
}

/** Without an `x-user` header the client is its peer address, as the runtime's server reports it. */
export async function identifiesByPeerAddress(base: string, store: string): Promise<void> {
  const response = await hello(base, store, undefined);
  expect(response.status).toBe(200);
  expect(await response.json()).toMatchObject({ identity: 'ip:127.0.0.1', degraded: false });
}
