/**
 * The store's own Upstash REST client: the five commands the store and the config source send (EVALSHA, EVAL,
 * DEL, GET, SET) and `command()` for any other, each one `POST` of a JSON array to the database's URL, on the
 * runtime's `fetch`. It exists for
 * bundle size and for one behaviour: @upstash/redis is 76 kB minified and resends a request whose `fetch` threw,
 * which for a rate limiter can run a decision twice. This client sends every request exactly once; a failure
 * (network error, HTTP error, a body that is not the protocol's JSON, the timeout) rejects, and the limiter's
 * failure policy answers for it. Like @upstash/redis it asks for `cache: 'no-store'`, so no HTTP cache between the
 * runtime and Upstash can answer a command; a runtime that refuses the field (workerd, Cloudflare Workers' runtime,
 * at older compatibility dates, 2024-09-01 for one: "The 'cache' field on 'RequestInitializerDict' is not
 * implemented.", thrown before anything is sent) gets the request again without it, and every later one without it.
 *
 * Protocol (Upstash's REST API): `POST <url>` with `Authorization: Bearer <token>` and the command as a JSON
 * array of strings; the answer is `{ "result": ... }` (200) or `{ "error": "..." }` (400 for a failed command,
 * 401 for a bad token). Results come back as plain JSON (no `Upstash-Encoding`), so a string is the string Redis
 * holds. Global databases: the `upstash-sync-token` of the latest answer is sent with the next request, so a read
 * sees this instance's writes (what @upstash/redis calls read-your-writes).
 */
import { SluiceError } from '@sluice/core';
import { describeValue, durationOption, optionNames, rejectUnknownOptions } from '@sluice/core/internal';
import type { Duration } from '@sluice/core';

export interface UpstashRestOptions {
  /** The database's REST URL, `https://<name>.upstash.io` (UPSTASH_REDIS_REST_URL). */
  url: string;
  /** The database's REST token (UPSTASH_REDIS_REST_TOKEN). */
  token: string;
  /**
   * Abort a request that has no answer after this long (ms or a string like `'10s'`; 1 ms to 10 minutes). The
   * limiter's own `timeout` answers the decision sooner; this one ends the request itself, so a hung connection
   * does not hold a worker.
   * @default '10s'
   */
  timeout?: Duration;
  /** The `fetch` to send with (the runtime's own fits). @default globalThis.fetch */
  fetch?(input: string, init: UpstashFetchInit): Promise<UpstashFetchResponse>;
}

/** What `upstashRest()` returns: the commands `upstashStore` and `upstashConfigSource` call, and any other. */
export interface UpstashRestClient {
  /**
   * Any Redis command the REST API takes, as its words: `command(['INCR', 'refusals'])`. The result is Upstash's
   * JSON `result` as is (integers as numbers, strings as strings, arrays as arrays, nil as null).
   */
  command(args: Array<string | number>): Promise<unknown>;
  evalsha(sha1: string, keys: string[], args: Array<string | number>): Promise<unknown>;
  eval(script: string, keys: string[], args: Array<string | number>): Promise<unknown>;
  del(...keys: string[]): Promise<number>;
  get(key: string): Promise<unknown>;
  set(key: string, value: string): Promise<unknown>;
}

/**
 * What the client passes to `fetch`: a subset of the web's RequestInit, typed here (the package has no DOM
 * typings), plus `signal`, `AbortSignal.timeout(timeout)` where the runtime has it (left out of the type so that
 * the runtime's own fetch fits the option without DOM typings on either side).
 */
export interface UpstashFetchInit {
  method: 'POST';
  headers: Record<string, string>;
  body: string;
  /** Left out where the runtime's fetch refused it (see above). */
  cache?: 'no-store';
}

/** What the client reads of fetch's Response. */
export interface UpstashFetchResponse {
  status: number;
  headers: { get(name: string): string | null };
  text(): Promise<string>;
}

const web = globalThis as unknown as {
  URL: new (text: string) => { protocol: string; host: string };
  fetch?: (input: string, init: UpstashFetchInit) => Promise<UpstashFetchResponse>;
  AbortSignal?: { timeout?(ms: number): unknown };
};

const KNOWN = optionNames<UpstashRestOptions>({ url: true, token: true, timeout: true, fetch: true });

/** An absolute http: or https: URL with a host, as the WHATWG URL parser reads it. */
function isHttpUrl(text: string): boolean {
  try {
    const parsed = new web.URL(text);
    return (parsed.protocol === 'https:' || parsed.protocol === 'http:') && parsed.host !== '';
  } catch {
    return false;
  }
}

/**
 * A REST client for `upstashStore` and `upstashConfigSource` without @upstash/redis: `upstashStore({ url, token })`
 * makes one, or make it here to share it between the store and the config source.
 * @example
 * const redis = upstashRest({ url: env.UPSTASH_REDIS_REST_URL, token: env.UPSTASH_REDIS_REST_TOKEN });
 * const limiter = createLimiter({ store: upstashStore(redis), rules });
 */
export function upstashRest(options: UpstashRestOptions): UpstashRestClient {
  if (typeof options !== 'object' || options === null) {
    throw new SluiceError('INVALID_OPTION', `upstashRest: options must be an object { url, token }, got ${describeValue(options)}`);
  }
  rejectUnknownOptions(options, KNOWN, 'upstashRest');
  const { url, token } = options;
  if (typeof url !== 'string' || !isHttpUrl(url)) {
    throw new SluiceError(
      'INVALID_OPTION',
      `upstashRest: url must be the database's REST URL (http:// or https://, e.g. UPSTASH_REDIS_REST_URL), got ${describeValue(url)}`,
    );
  }
  if (typeof token !== 'string' || !/^[\x21-\x7e]+$/.test(token)) {
    // It goes into a header: a space, a line break or a non-ASCII character would fail every request instead.
    throw new SluiceError(
      'INVALID_OPTION',
      `upstashRest: token must be the database's REST token (printable ASCII without spaces, e.g. UPSTASH_REDIS_REST_TOKEN), got ${typeof token === 'string' ? (token === '' ? 'an empty string' : `a string of ${token.length} characters with one outside that`) : describeValue(token)}`,
    );
  }
  const timeout = durationOption(options.timeout ?? 10_000, 'upstashRest: timeout', { min: 1, max: 600_000 });
  const send: ((input: string, init: UpstashFetchInit) => Promise<UpstashFetchResponse>) | undefined = options.fetch ?? web.fetch;
  if (typeof send !== 'function') {
    throw new SluiceError(
      'INVALID_OPTION',
      `upstashRest: fetch must be a function (this runtime has no global fetch), got ${describeValue(send)}`,
    );
  }
  const endpoint = url.replace(/\/+$/, '');
  const authorization = `Bearer ${token}`;
  let syncToken: string | null = null;
  let noStore = true;

  const command = async (args: Array<string | number>): Promise<unknown> => {
    const headers: Record<string, string> = { authorization, 'content-type': 'application/json' };
    if (syncToken !== null) headers['upstash-sync-token'] = syncToken;
    const init: UpstashFetchInit = { method: 'POST', headers, body: JSON.stringify(args) };
    if (noStore) init.cache = 'no-store';
    const signal = web.AbortSignal?.timeout?.(timeout);
    if (signal !== undefined) Object.assign(init, { signal });
    let response: UpstashFetchResponse;
    try {
      // Called detached (no `this`): a runtime's own fetch called as a method of another object throws Illegal invocation.
      response = await send(endpoint, init);
    } catch (error) {
      // Refused while building the request, so nothing was sent: once more without the field (see above).
      // Only the refusal of the field itself: a network error that merely mentions a cache may have been sent.
      if (!init.cache || !/\bcache\b.*\bnot (?:yet )?(?:implemented|supported)/i.test(String(error))) throw error;
      noStore = false;
      delete init.cache;
      response = await send(endpoint, init);
    }
    const text = await response.text();
    let body: { result?: unknown; error?: unknown } | undefined;
    try {
      body = JSON.parse(text) as typeof body;
    } catch {
      // not the protocol's JSON (a proxy's error page, a truncated answer): reported below
    }
    if (typeof body === 'object' && body !== null && typeof body.error === 'string') {
      // Redis's own reply text first, so the stores' NOSCRIPT check (run-script.ts) reads its code.
      throw new Error(`${body.error}, command was: ${String(args[0])} (HTTP ${response.status})`);
    }
    if (response.status !== 200 || typeof body !== 'object' || body === null || !('result' in body)) {
      throw new Error(`Upstash REST answered HTTP ${response.status} without a result to ${String(args[0])}: ${text.slice(0, 200)}`);
    }
    const next = response.headers.get('upstash-sync-token');
    if (next !== null) syncToken = next;
    return body.result;
  };

  return {
    command: (args) => {
      if (
        !Array.isArray(args) ||
        args.length === 0 ||
        !args.every((word) => typeof word === 'string' || (typeof word === 'number' && Number.isFinite(word)))
      ) {
        return Promise.reject(
          new SluiceError(
            'INVALID_OPTION',
            `upstashRest: command must be a non-empty array of strings and finite numbers such as ['INCR', 'key'], got ${describeValue(args)}`,
          ),
        );
      }
      return command(args);
    },
    evalsha: (sha1, keys, args) => command(['EVALSHA', sha1, keys.length, ...keys, ...args]),
    eval: (script, keys, args) => command(['EVAL', script, keys.length, ...keys, ...args]),
    del: async (...keys) => Number(await command(['DEL', ...keys])),
    get: (key) => command(['GET', key]),
    set: (key, value) => command(['SET', key, value]),
  };
}
