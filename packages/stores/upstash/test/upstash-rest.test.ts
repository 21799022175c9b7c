/**
 * The store's own REST client (`upstashRest`, or `{ url, token }` given to the store) over real HTTP to the
 * fixture: the protocol, exactly one request per call whatever fails (the reason it exists besides size), the
 * failure policy on every fault, NOSCRIPT, the sync token, and its options. Runs in Node and in edge-runtime.
 */
import { createLimiter, fixedWindow, isSluiceError, tokenBucket } from '@sluice/core';
import { isNoScript } from '@sluice/redis-script';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { upstashConfigSource, upstashRest, upstashStore, type UpstashFetchInit, type UpstashFetchResponse } from '../src/index.js';
import { client, control, identity, token, url } from './helpers.js';

beforeEach(() => control.reset());

/** A fetch answering like Upstash, one canned answer per request in order, recording what the client sent. */
function upstash(answers: Array<{ status: number; body: unknown; syncToken?: string }>) {
  const sent: UpstashFetchInit[] = [];
  const fetch = (_input: string, init: UpstashFetchInit): Promise<UpstashFetchResponse> => {
    const answer = answers[sent.length]!;
    sent.push(init);
    return Promise.resolve({
      status: answer.status,
      headers: { get: (name: string) => (name.toLowerCase() === 'upstash-sync-token' ? (answer.syncToken ?? null) : null) },
      text: () => Promise.resolve(JSON.stringify(answer.body)),
    });
  };
  return { fetch, sent };
}
afterEach(() => control.reset()); // also answers requests still held by `hang`

describe('the protocol', () => {
  it('sends each command as one POST of a JSON array and reads plain JSON results (strings as Redis holds them)', async () => {
    const rest = upstashRest({ url, token });
    const key = identity('rest-string');
    const text = 'ünïcødé, "quotes", 0123, {"json": true}';
    expect(await rest.set(key, text)).toBe('OK');
    expect(await rest.get(key)).toBe(text); // no base64, no JSON parsing of the value
    expect(await rest.eval('return {1, 2, ARGV[1]}', [], ['x'])).toEqual([1, 2, 'x']);
    expect(await rest.del(key, identity('absent'))).toBe(1);
    expect(await rest.get(key)).toBeNull();
    const stats = await control.stats();
    expect(stats).toMatchObject({ requests: 5, command: 5, pipeline: 0, unauthorized: 0 });
    expect(stats.byCommand).toMatchObject({ set: 1, get: 2, eval: 1, del: 1 });
  });

  it('command() sends any command and answers its result as is; it refuses words that are not strings or numbers, sending nothing', async () => {
    const rest = upstashRest({ url, token });
    const key = identity('incr');
    expect(await rest.command(['INCR', key])).toBe(1);
    expect(await rest.command(['INCRBY', key, 41])).toBe(42);
    expect(await rest.command(['RPUSH', `${key}:list`, 'a', 'b'])).toBe(2);
    expect(await rest.command(['LRANGE', `${key}:list`, 0, -1])).toEqual(['a', 'b']);
    expect(await rest.command(['HGET', `${key}:absent`, 'f'])).toBeNull();
    const before = (await control.stats()).requests;
    for (const bad of [[], ['INCR', { key }], ['INCR', Number.NaN], 'INCR k']) {
      await expect(rest.command(bad as never)).rejects.toThrow(
        /upstashRest: command must be a non-empty array of strings and finite numbers such as \['INCR', 'key'\]/,
      );
    }
    expect((await control.stats()).requests).toBe(before);
  });

  it('a URL with a trailing slash works the same', async () => {
    expect(await upstashRest({ url: `${url}/`, token }).get(identity('slash'))).toBeNull();
  });

  it('sends back the sync token of the latest answer that had one, as the opaque string it is (read your writes on global databases)', async () => {
    const { fetch: answering, sent } = upstash([
      { status: 200, body: { result: 'OK' }, syncToken: 'ZW5kcG9pbnQ=:7f3a' },
      { status: 200, body: { result: null } },
      { status: 200, body: { result: 'v' }, syncToken: 'opaque/2+' },
      { status: 200, body: { result: 1 } },
    ]);
    const rest = upstashRest({ url, token, fetch: answering });
    await rest.set('k', 'v');
    await rest.get('absent');
    await rest.get('k');
    await rest.del('k');
    expect(sent.map((init) => init.headers['upstash-sync-token'] ?? null)).toEqual([
      null,
      'ZW5kcG9pbnQ=:7f3a',
      'ZW5kcG9pbnQ=:7f3a',
      'opaque/2+',
    ]);
  });

  it('over HTTP, each request carries the token the previous answer carried', async () => {
    const answered: Array<string | null> = [];
    const sent: Array<string | null> = [];
    const rest = upstashRest({
      url,
      token,
      fetch: async (input, init) => {
        sent.push(init.headers['upstash-sync-token'] ?? null);
        const response = await fetch(input, init);
        answered.push(response.headers.get('upstash-sync-token'));
        return response;
      },
    });
    for (let i = 0; i < 3; i++) await rest.get(identity('sync'));
    expect(answered.every((t) => typeof t === 'string' && t !== '')).toBe(true);
    expect(sent).toEqual([null, answered[0], answered[1]]);
  });

  it("a wrong token rejects with Upstash's answer (401 WRONGPASS) leading the message, sent once", async () => {
    const { fetch: answering, sent } = upstash([{ status: 401, body: { error: 'WRONGPASS invalid or missing auth token' } }]);
    const error: unknown = await upstashRest({ url, token: 'wrong', fetch: answering })
      .get('k')
      .catch((e: unknown) => e);
    expect((error as Error).message).toBe('WRONGPASS invalid or missing auth token, command was: GET (HTTP 401)');
    expect(sent).toHaveLength(1);
    // The same over HTTP: one request, refused.
    const refused: unknown = await upstashRest({ url, token: 'wrong' })
      .get('k')
      .catch((e: unknown) => e);
    expect((refused as Error).message).toMatch(/, command was: GET \(HTTP 401\)$/);
    expect(await control.stats()).toMatchObject({ requests: 1, unauthorized: 1 });
  });

  it("a command's Redis error leads the message, so the stores' NOSCRIPT check reads it; a script's own error is no miss", async () => {
    const rest = upstashRest({ url, token });
    const miss: unknown = await rest.evalsha('f'.repeat(40), [], []).catch((e: unknown) => e);
    expect((miss as Error).message).toMatch(/^NOSCRIPT /);
    expect(isNoScript(miss)).toBe(true);
    const raised: unknown = await rest.eval("error('NOSCRIPT in a message')", [], []).catch((e: unknown) => e);
    expect(isNoScript(raised)).toBe(false);
  });
});

describe("fetch's cache mode", () => {
  it("asks for cache: 'no-store' on every request, as @upstash/redis does", async () => {
    const { fetch: answering, sent } = upstash([
      { status: 200, body: { result: null } },
      { status: 200, body: { result: 'OK' } },
    ]);
    const rest = upstashRest({ url, token, fetch: answering });
    await rest.get('k');
    await rest.set('k', 'v');
    expect(sent.map((init) => init.cache)).toEqual(['no-store', 'no-store']);
  });

  it('a runtime whose fetch refuses the cache field (older Cloudflare Workers) gets the request without it, and every later one', async () => {
    const tried: Array<string | undefined> = [];
    const rest = upstashRest({
      url,
      token,
      fetch: (input, init) => {
        tried.push(init.cache);
        // What workerd throws (test/runtimes/workerd.test.ts sees it at an older compatibility date), before sending anything.
        if ('cache' in init) return Promise.reject(new Error("The 'cache' field on 'RequestInitializerDict' is not implemented."));
        return fetch(input, init);
      },
    });
    expect(await rest.get(identity('no-cache-field'))).toBeNull();
    expect(await rest.get(identity('no-cache-field'))).toBeNull();
    expect(tried).toEqual(['no-store', undefined, undefined]);
    expect((await control.stats()).requests).toBe(2);
  });

  it.each(['fetch failed', 'fetch failed: socket closed by the cache proxy'])(
    'any other error of fetch rejects as it is, sent once, even one that mentions a cache (%s)',
    async (message) => {
      let calls = 0;
      const rest = upstashRest({
        url,
        token,
        fetch: () => {
          calls++;
          return Promise.reject(new TypeError(message));
        },
      });
      await expect(rest.get('k')).rejects.toThrow(message);
      expect(calls).toBe(1);
    },
  );
});

describe('through the store', () => {
  it('upstashStore({ url, token }) decides with one request per decision, EVAL once on a fresh script cache', async () => {
    const limiter = createLimiter({
      store: upstashStore({ url, token }),
      rules: tokenBucket({ capacity: 3, refillRate: 1, interval: '1m' }),
    });
    const who = identity('rest-store');
    const decisions = [];
    for (let i = 0; i < 5; i++) decisions.push(await limiter.limit(who));
    expect(decisions.map((d) => d.allowed)).toEqual([true, true, true, false, false]);
    expect(decisions.map((d) => d.remaining)).toEqual([2, 1, 0, 0, 0]);
    expect(decisions.every((d) => d.degraded === false)).toBe(true);
    const stats = await control.stats();
    // EVALSHA per decision; at most one NOSCRIPT + EVAL, the first time this script meets this Redis.
    expect(stats.requests - (stats.byCommand.eval ?? 0)).toBe(5);
    expect(stats.byCommand.evalsha).toBe(5);
  });

  it('gives the same decisions as the store on @upstash/redis, call for call', async () => {
    const rules = [fixedWindow({ limit: 4, window: '1m' }), tokenBucket({ capacity: 2, refillRate: 1, interval: '10s' })];
    const now = 1_700_000_000_000;
    const ours = createLimiter({ store: upstashStore({ url, token }, { clock: 'client' }), rules, clock: () => now });
    const theirs = createLimiter({ store: upstashStore(client(), { clock: 'client' }), rules, clock: () => now });
    const [a, b] = [identity('same-a'), identity('same-b')];
    for (const cost of [1, 0, 2, 1, 5, 1]) {
      const [x, y] = [await ours.limit(a, { cost }), await theirs.limit(b, { cost })];
      expect({ ...x, key: '' }).toEqual({ ...y, key: '' });
    }
  });

  it('upstashConfigSource({ url, token }) reads, writes and compares-and-sets the document', async () => {
    const source = upstashConfigSource({ url, token }, { prefix: identity('cfg') });
    expect(await source.read('api')).toBeUndefined();
    await source.write('api', '{"revision":1}');
    expect(await source.read('api')).toBe('{"revision":1}');
    expect(await source.replace!('api', 1, '{"revision":2}')).toBe(true);
    expect(await source.replace!('api', 1, '{"revision":3}')).toBe(false);
    expect(await source.read('api')).toBe('{"revision":2}');
    await source.remove('api');
    expect(await source.read('api')).toBeUndefined();
  });
});

describe('faults: every one rejects after exactly one request, and the limiter answers degraded', () => {
  const rules = fixedWindow({ limit: 5, window: '1m' });

  it.each([
    ['reset', /fetch failed|network|socket|terminated|connection/i],
    ['status-500', /HTTP 500/],
    ['garbage', /HTTP 200 without a result to EVALSHA/],
  ] as const)('%s: STORE_ERROR naming the failure, one request (never resent)', async (fault, message) => {
    const limiter = createLimiter({ store: upstashStore({ url, token }), rules, circuitBreaker: false, timeout: 2000 });
    await control.fault(fault);
    const decision = await limiter.limit(identity(fault));
    expect(decision).toMatchObject({ allowed: true, degraded: true, reason: 'store_unavailable' });
    expect(isSluiceError(decision.error) && decision.error.code).toBe('STORE_ERROR');
    expect(String((decision.error as Error & { cause?: unknown }).cause ?? decision.error)).toMatch(message);
    expect((await control.stats()).requests).toBe(1);
  });

  it("hang: the limiter's deadline answers; the client's own timeout ends the request", async () => {
    const limiter = createLimiter({ store: upstashStore({ url, token, timeout: 300 }), rules, timeout: 100, circuitBreaker: false });
    await control.fault('hang');
    const decision = await limiter.limit(identity('hang'));
    expect(isSluiceError(decision.error) && decision.error.code).toBe('STORE_TIMEOUT');
    const started = Date.now();
    const aborted: unknown = await upstashRest({ url, token, timeout: '200ms' })
      .get('k')
      .catch((e: unknown) => e);
    expect(Date.now() - started).toBeGreaterThanOrEqual(150);
    expect(String(aborted)).toMatch(/abort|timeout/i);
    expect((await control.stats()).requests).toBe(2);
  });
});

describe('options', () => {
  it.each([
    [undefined, /upstashRest: options must be an object \{ url, token \}, got undefined/],
    [{ url: 'upstash.io', token: 't' }, /upstashRest: url must be the database's REST URL \(http:\/\/ or https:\/\//],
    [
      { url, token: '' },
      /upstashRest: token must be the database's REST token \(printable ASCII without spaces, e.g. UPSTASH_REDIS_REST_TOKEN\), got an empty string/,
    ],
    [{ url, token: 'secret\nx' }, /upstashRest: token must be .*got a string of 8 characters with one outside that$/],
    [{ url, token: 'sécret' }, /upstashRest: token must be/],
    [{ url, token: 'has space' }, /upstashRest: token must be/],
    [{ url: 'https://', token }, /upstashRest: url must be/],
    [{ url: 'ftp://example.upstash.io', token }, /upstashRest: url must be/],
    [{ url, token, timeout: 0 }, /upstashRest: timeout must be a duration from 1 to 600000 ms .*got 0/],
    [{ url, token, timeout: '11m' }, /upstashRest: timeout must be a duration/],
    [{ url, token, timeout: 'soon' }, /upstashRest: timeout must be a duration/],
    [{ url, token, fetch: 'no' }, /upstashRest: fetch must be a function/],
    [{ url, token, retries: 3 }, /upstashRest.*retries/],
  ])('rejects %o naming the field', (options, message) => {
    expect(() => upstashRest(options as never)).toThrow(message);
  });

  it('the store and the config source take { url, token } and check it the same way', () => {
    expect(() => upstashStore({ url: 'nope', token })).toThrow(/upstashRest: url must be/);
    expect(() => upstashConfigSource({ url, token: 7 as never })).toThrow(/upstashRest: token must be/);
    expect(() => upstashStore({ token } as never)).toThrow(/upstashStore: redis must be \{ url, token \}/);
  });

  it('sends through the given fetch', async () => {
    const seen: string[] = [];
    const rest = upstashRest({ url, token, fetch: (input, init) => (seen.push(`${init.method} ${input}`), fetch(input, init)) });
    await rest.get(identity('own-fetch'));
    expect(seen).toEqual([`POST ${url}`]);
    // The runtime's fetch fits the option's type as it is (typecheck), and works.
    expect(await upstashRest({ url, token, fetch: globalThis.fetch }).get(identity('global-fetch'))).toBeNull();
  });
});
