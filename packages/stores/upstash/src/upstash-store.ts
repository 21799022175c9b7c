import { SluiceError, type Store } from '@sluice/core';
import type { LimitRequest, LimitResult, StoreCapabilities, StoreOperation } from '@sluice/core/store';
import { describeValue, optionNames } from '@sluice/core/internal';
import { jsonStringBytes, LimitBatcher, runScript, scriptStoreOptions, type ScriptCommands } from '@sluice/redis-script';
import { upstashRest, type UpstashRestOptions } from './upstash-rest.js';
import { UPSTASH_LIMIT_SCRIPT, upstashScriptSha1 } from './upstash-script.js';

export interface UpstashStoreOptions {
  /**
   * Whose clock decides. `'store'` reads Redis `TIME` inside the script, so serverless instances with skewed
   * clocks agree on one timeline. `'client'` uses the limiter's clock (`request.now`), for tests that drive a
   * fake clock or deployments that forbid `TIME`; then every instance's clock must be in sync.
   * @default 'store'
   */
  clock?: 'store' | 'client';
  /**
   * Coalesce decisions issued together (same tick) into one script call: one EVALSHA, one TIME and one MGET
   * for the lot, so under concurrency a decision costs a fraction of an HTTP request and of a Redis command.
   * Each decision is still atomic and in order; nothing waits on a timer (a decision that is alone is sent at
   * once). `false` sends one EVALSHA per decision.
   * @default true
   */
  batch?: boolean;
  /**
   * Most decisions one script call carries (1 to 1000). A call also leaves before its request would pass
   * UPSTASH_MAX_REQUEST_BYTES.
   * @default 64
   */
  maxBatch?: number;
}

/**
 * The three methods of @upstash/redis's `Redis` the store calls. Any entry point of the client works
 * (`@upstash/redis`, `/cloudflare`, `/fastly`), with auto-pipelining on or off.
 */
export interface UpstashClient {
  evalsha(sha1: string, keys: string[], args: Array<string | number>): Promise<unknown>;
  eval(script: string, keys: string[], args: Array<string | number>): Promise<unknown>;
  del(...keys: string[]): Promise<number>;
}

const KNOWN = optionNames<UpstashStoreOptions>({ clock: true, batch: true, maxBatch: true });

/**
 * The largest request body the store sends, in bytes of UTF-8 JSON: a batch of decisions whose script call would
 * pass it is split. Upstash refuses a larger body with `ERR max request size exceeded`, and every decision in it
 * would fail: 1 MB (1,048,576 bytes) for the free and pay-as-you-go plans by its troubleshooting page (a later
 * version of that page says 10 MB; staying under 1 MB holds for both), the rest is headroom. The bound holds
 * for the call's EVAL, the larger of its two forms (the NOSCRIPT fallback sends the script's text), and covers the
 * store's own command only: an @upstash/redis client that auto-pipelines may put other commands in the same body.
 */
export const UPSTASH_MAX_REQUEST_BYTES = 1_000_000;

/**
 * Store on Upstash Redis over REST, for edge and serverless code: pass `{ url, token }` for the store's own
 * client (`upstashRest()`, no dependency, never resends), or an @upstash/redis `Redis`. It runs the Redis store's Lua
 * script (flagged `allow-key-locking` for Upstash), so a decision costs at most one HTTP request, compound rules
 * included (decisions issued in the same tick share one request and one EVALSHA), and the Redis and Upstash
 * stores agree to the unit. The client is the user's: the store never changes its
 * options. Edge-safe: no Node built-in, only `fetch` through the client and WebCrypto for the script digest.
 *
 * Every value read back is an integer, so the client's automatic JSON deserialization and base64 response
 * encoding (both on by default) cannot change a result.
 * @example
 * const store = upstashStore({ url: env.UPSTASH_REDIS_REST_URL, token: env.UPSTASH_REDIS_REST_TOKEN });
 * const same = upstashStore(new Redis({ url, token })); // or @upstash/redis
 * const limiter = createLimiter({ store, rules: fixedWindow({ limit: 100, window: '1m' }) });
 * @remarks Concurrency leases (`createConcurrencyLimiter()`) need `upstashLeaseStore()`, the same store with
 * `lease()`: kept apart so that an app that only rate limits does not ship the lease script.
 */
export function upstashStore(redis: UpstashClient | UpstashRestOptions, options: UpstashStoreOptions = {}): UpstashStore {
  return new UpstashStore(restClientFor(redis), options);
}

/** The one error for a `redis` argument that is neither `{ url, token }` nor an @upstash/redis client. */
export function notAnUpstashClient(where: string, got: string): SluiceError {
  return new SluiceError(
    'INVALID_OPTION',
    `${where}: redis must be { url, token } or an @upstash/redis client, e.g. ${where}(new Redis({ url, token })), got ${got}`,
  );
}

/**
 * `{ url, token }` (no `evalsha`): the store's own REST client, `upstashRest()`; anything else is taken as a
 * client and checked by the caller.
 */
export function restClientFor<T>(redis: T | UpstashRestOptions): T {
  const candidate = redis as { evalsha?: unknown; url?: unknown } | null;
  if (typeof candidate === 'object' && candidate !== null && candidate.evalsha === undefined && 'url' in candidate) {
    return upstashRest(redis as UpstashRestOptions) as T;
  }
  return redis as T;
}

const OPERATIONS: readonly StoreOperation[] = ['limit', 'reset', 'take', 'reserve'];

export class UpstashStore implements Store {
  readonly capabilities: StoreCapabilities;
  private readonly redis: UpstashClient;
  private readonly batcher: LimitBatcher;
  protected readonly clock: 'store' | 'client';

  /** `operations`: what the store announces, for a subclass that adds one (UpstashLeaseStore). */
  constructor(redis: UpstashClient, options: UpstashStoreOptions = {}, where = 'upstashStore', operations = OPERATIONS) {
    const candidate = redis as Partial<UpstashClient> | null | undefined;
    if (
      typeof candidate !== 'object' ||
      candidate === null ||
      typeof candidate.evalsha !== 'function' ||
      typeof candidate.eval !== 'function' ||
      typeof candidate.del !== 'function'
    ) {
      throw notAnUpstashClient(where, kind(redis));
    }
    const { clock, batch, maxBatch } = scriptStoreOptions(options, KNOWN, where);
    this.redis = redis;
    this.clock = clock;
    this.capabilities = { synchronous: false, clock, operations: [...operations] };
    // The batcher's default wait is microtasks only (edge runtimes have no process.nextTick).
    // `["EVAL",` + the script + `,` + the key count + the keys and arguments + `]`: the bytes besides them.
    const jsonBody = { limitBytes: UPSTASH_MAX_REQUEST_BYTES, overheadBytes: jsonStringBytes(UPSTASH_LIMIT_SCRIPT) + 10 };
    this.batcher = new LimitBatcher({ clock, maxBatch: batch ? maxBatch : 1, call: this.call, jsonBody });
  }

  limit(request: LimitRequest): Promise<LimitResult> {
    return this.batcher.limit(request);
  }

  async reset(key: string, ruleIds: readonly string[]): Promise<void> {
    if (ruleIds.length === 0) return;
    await this.redis.del(...ruleIds.map((id) => `${key}:${id}`));
  }

  /** EVALSHA and EVAL of each script for runScript's NOSCRIPT fallback, made once its SHA-1 is known. */
  private readonly scripts = new Map<string, ScriptCommands>();

  private readonly call = (keys: string[], args: string[]): Promise<unknown> => this.run(UPSTASH_LIMIT_SCRIPT, keys, args);

  /** One call of a script (either of upstash-script.ts's): EVALSHA once its digest is known, EVAL on NOSCRIPT. */
  protected async run(script: string, keys: string[], args: string[]): Promise<unknown> {
    const pending = upstashScriptSha1(script);
    const { sha1 } = 'then' in pending ? await pending : pending;
    // No WebCrypto digest here: the script goes by its text every time.
    if (sha1 === undefined) return this.redis.eval(script, keys, args);
    let commands = this.scripts.get(script);
    if (commands === undefined) {
      commands = {
        evalsha: (k, a) => this.redis.evalsha(sha1, k, a),
        eval: (k, a) => this.redis.eval(script, k, a),
      };
      this.scripts.set(script, commands);
    }
    return runScript(commands, keys, args);
  }
}

function kind(value: unknown): string {
  const text = describeValue(value);
  return text === 'an object' ? 'an object without evalsha/eval/del' : text;
}
