import { SluiceError, type LimitRequest, type LimitResult, type Store, type StoreCapabilities } from '@sluice/core';
import type { Cluster, Redis } from 'ioredis';
import { LIMIT_SCRIPT, LIMIT_SCRIPT_SHA1 } from './scripts/limit-script.js';
import { parseReply, ruleArguments } from './scripts/arguments.js';

export interface RedisStoreOptions {
  /**
   * Whose clock decides. `'store'` reads Redis `TIME` inside the script, so app servers with skewed clocks agree
   * on one timeline. `'client'` uses the limiter's clock (`request.now`), for deployments that forbid `TIME`
   * or tests that drive a fake clock; then every app server's clock must be in sync.
   * @default 'store'
   */
  clock?: 'store' | 'client';
}

/** The three ioredis methods the store calls; `Redis` and `Cluster` both have them. */
type ScriptClient = Pick<Redis, 'evalsha' | 'eval' | 'del'>;

const KNOWN = ['clock'];

/**
 * Store on the user's ioredis client, standalone `Redis` or `Cluster`, with or without `enableAutoPipelining`.
 * One decision = one EVALSHA of one Lua script, compound rules included. The client is the user's: the store
 * never closes it and never changes its options.
 * @example createLimiter({ store: redisStore(new Redis()), rules: gcra({ limit: 100, period: '1m' }) })
 */
export function redisStore(client: Redis | Cluster, options: RedisStoreOptions = {}): RedisStore {
  return new RedisStore(client, options);
}

export class RedisStore implements Store {
  readonly capabilities: StoreCapabilities;
  private readonly client: ScriptClient;
  private readonly clock: 'store' | 'client';

  constructor(client: Redis | Cluster, options: RedisStoreOptions = {}) {
    const candidate = client as Partial<ScriptClient> | null | undefined;
    if (
      typeof candidate !== 'object' ||
      candidate === null ||
      typeof candidate.evalsha !== 'function' ||
      typeof candidate.eval !== 'function' ||
      typeof candidate.del !== 'function'
    ) {
      throw new SluiceError('INVALID_OPTION', 'redisStore: client must be an ioredis Redis or Cluster instance, e.g. redisStore(new Redis())');
    }
    if (typeof options !== 'object' || options === null || Array.isArray(options)) {
      throw new SluiceError('INVALID_OPTION', 'redisStore: options must be an object');
    }
    for (const key of Object.keys(options)) {
      if (!KNOWN.includes(key)) {
        throw new SluiceError('UNKNOWN_OPTION', `redisStore: unknown option ${JSON.stringify(key)}; accepted options are ${KNOWN.join(', ')}`);
      }
    }
    const clock = options.clock ?? 'store';
    if (clock !== 'store' && clock !== 'client') {
      throw new SluiceError('INVALID_OPTION', `redisStore: clock must be 'store' or 'client', got ${JSON.stringify(clock)}`);
    }
    this.client = client;
    this.clock = clock;
    this.capabilities = { synchronous: false, clock, operations: ['limit', 'reset'] };
  }

  async limit(request: LimitRequest): Promise<LimitResult> {
    // numkeys, KEYS, ARGV in one flat list (the same values as scriptKeys and scriptArguments, built in one pass).
    const { key, rules } = request;
    const call: Array<string | number> = [rules.length];
    for (let i = 0; i < rules.length; i++) call.push(`${key}:${rules[i]!.id}`);
    call.push(request.mode, request.cost, this.clock === 'store' ? '' : request.now);
    for (let i = 0; i < rules.length; i++) {
      const values = ruleArguments(rules[i]!);
      for (let j = 0; j < values.length; j++) call.push(values[j]!);
    }
    let reply: unknown;
    try {
      reply = await this.client.evalsha(LIMIT_SCRIPT_SHA1, ...(call as [number, ...Array<string | number>]));
    } catch (error) {
      // NOSCRIPT means the script did not run (fresh or flushed server), so one EVAL cannot double count.
      // Any other error may have run it, or not: it is never retried, the limiter's failure policy decides.
      if (!isNoScript(error)) throw error;
      reply = await this.client.eval(LIMIT_SCRIPT, ...(call as [number, ...Array<string | number>]));
    }
    return parseReply(reply, rules);
  }

  async reset(key: string, ruleIds: readonly string[]): Promise<void> {
    if (ruleIds.length === 0) return;
    // One DEL: the keys share the identity's hash tag, so this is a single-slot command on a Cluster too.
    await this.client.del(...ruleIds.map((id) => `${key}:${id}`));
  }
}

function isNoScript(error: unknown): boolean {
  return error instanceof Error && error.message.startsWith('NOSCRIPT');
}
