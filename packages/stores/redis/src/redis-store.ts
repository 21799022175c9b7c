import { SluiceError, type Duration, type Store } from '@sluice/core';
import type { LeaseRequest, LeaseResult, LimitRequest, LimitResult, StoreCapabilities } from '@sluice/core/store';
import { describeValue, optionNames, timerDuration } from '@sluice/core/internal';
import { storeClient, type RedisClient, type StoreClient } from './clients/index.js';
import { ConnectionGate } from './connection-gate.js';
import {
  LEASE_SCRIPT,
  LEASE_SCRIPT_SHA1,
  LIMIT_FUNCTION,
  LIMIT_LIBRARY,
  LIMIT_SCRIPT,
  LIMIT_SCRIPT_SHA1,
  LeaseBatcher,
  LimitBatcher,
  runScript,
  scriptStoreOptions,
  type ScriptCommands,
} from '@sluice/redis-script';

export interface RedisStoreOptions {
  /**
   * Whose clock decides. `'store'` reads Redis `TIME` inside the script, so app servers with skewed clocks agree
   * on one timeline. `'client'` uses the limiter's clock (`request.now`), for deployments that forbid `TIME`
   * or tests that drive a fake clock; then every app server's clock must be in sync.
   * @default 'store'
   */
  clock?: 'store' | 'client';
  /**
   * Coalesce decisions issued together (in the same turn of the event loop, e.g. by the requests one socket read
   * brought) into script calls: still one round trip per decision, each decision atomic and in order, but one
   * command, one TIME and one MGET for many. Nothing waits on a timer: a decision that is alone is sent at the
   * end of its turn (`setImmediate`). On a Cluster only decisions whose keys share a hash tag (one identity)
   * share a call. `false` sends one call per decision.
   * @default true
   */
  batch?: boolean;
  /**
   * Most decisions one script call carries (1 to 1000). While no call is waiting for its reply, a turn's first
   * call leaves as soon as it holds a quarter of the previous turn's decisions (at least 8, at most this), so
   * Redis runs it while the client prepares the rest; the rest leave together at the end of the turn.
   * @default 64
   */
  maxBatch?: number;
  /**
   * Run the script as a Redis 7 Function (FCALL), loaded by the store on first use (FUNCTION LOAD), where its
   * helpers and parsed rules outlive the call. Where Functions are unavailable (Redis before 7, an ACL without
   * FUNCTION or FCALL) the store falls back to EVALSHA by itself; on a Cluster it always uses EVALSHA.
   * Concurrency leases (`lease()`) always run their own script by EVALSHA.
   * @default true
   */
  functions?: boolean;
  /**
   * How long a decision issued while the client is not connected (starting, reconnecting) waits for it: ms or a
   * string like `'200ms'`.
   * The store holds such a decision itself, never in the client's offline queue (ioredis's, node-redis's), and
   * sends it only if the client becomes ready within this time; otherwise it fails with a STORE_ERROR (the
   * limiter's failure policy answers) and is never sent, so a decision that was already answered can never spend
   * budget later. Keep it at most the limiters' `timeout` (250 ms by default). 0 fails at once whenever the client
   * is not ready. Valkey GLIDE has no offline queue and no connection state: its own `requestTimeout` bounds the
   * wait instead (keep it at most the limiters' `timeout` too; both default to 250 ms).
   * @default '200ms'
   */
  offlineWait?: Duration;
}

/** At most what a timer can wait. */

const KNOWN = optionNames<RedisStoreOptions>({ clock: true, batch: true, maxBatch: true, functions: true, offlineWait: true });

/**
 * Store on the user's client: ioredis (standalone `Redis` or `Cluster`, with or without `enableAutoPipelining`),
 * node-redis (`createClient`, RESP2 or RESP3) or Valkey GLIDE (`GlideClient`), recognised by their members.
 * One decision = one call (FCALL of a Redis Function, or EVALSHA) of one Lua executor, compound rules included;
 * decisions issued together share calls.
 * The client is the user's: the store never closes it and never changes its options.
 * @example createLimiter({ store: redisStore(new Redis()), rules: gcra({ limit: 100, period: '1m' }) })
 */
export function redisStore(client: RedisClient, options: RedisStoreOptions = {}): RedisStore {
  return new RedisStore(client, options);
}

export class RedisStore implements Store {
  readonly capabilities: StoreCapabilities;
  private readonly client: StoreClient;
  private readonly batcher: LimitBatcher;
  private readonly gate: ConnectionGate;
  /** FCALL until the server shows it has no Functions for us; then EVALSHA for good. */
  private useFunction: boolean;
  /** The FUNCTION LOAD in flight, shared by every call that found the function missing. */
  private loading: Promise<void> | undefined;
  /** EVALSHA and EVAL of the script, for runScript's NOSCRIPT fallback. */
  private readonly script: ScriptCommands = {
    evalsha: (keys, args) => this.send('evalsha', [LIMIT_SCRIPT_SHA1, keys.length, keys, args]),
    eval: (keys, args) => this.send('eval', [LIMIT_SCRIPT, keys.length, keys, args]),
  };
  /** Lease operations issued in the same tick, in one EVALSHA of the lease script (EVAL once on NOSCRIPT); built on first use. */
  private leaseScript: LeaseBatcher | undefined;
  private readonly clock: 'store' | 'client';

  constructor(client: RedisClient, options: RedisStoreOptions = {}) {
    this.client = storeClient(client, 'redisStore');
    const { clock, batch, maxBatch } = scriptStoreOptions(options, KNOWN, 'redisStore');
    const functions = options.functions ?? true;
    if (typeof functions !== 'boolean')
      throw new SluiceError('INVALID_OPTION', `redisStore: functions must be true or false, got ${describeValue(functions)}`);
    const offlineWaitMs = timerDuration(options.offlineWait ?? 200, 'redisStore: offlineWait', 0);
    this.clock = clock;
    this.gate = new ConnectionGate(this.client, offlineWaitMs);
    this.useFunction = functions && !this.client.cluster;
    this.capabilities = { synchronous: false, clock, operations: ['limit', 'reset', 'take', 'reserve', 'lease'] };
    this.batcher = new LimitBatcher({
      clock,
      maxBatch: batch ? maxBatch : 1,
      splitWaves: true,
      call: this.call,
      // A script's keys must share one hash slot on a Cluster: only decisions of one hash tag (identity) share a call.
      group: this.client.cluster ? hashTagOf : undefined,
      // At the end of this turn of the event loop, not of this tick: a server handles each request in a callback of
      // its own (microtasks run between them), so process.nextTick sent one call per decision. In a fleet of 4
      // processes on 2 cores whose loops decide after a setImmediate (bench/suites/fleet/plain-store.mjs), calls
      // went from 1 to about 30 decisions and Redis commands per decision from 3.5 to 0.5. No timer: an idle loop
      // runs it at once.
      defer: (flush) => setImmediate(flush),
      // A reserve's caller sleeps from the answer to the booked start: its tick's call leaves at the end of the tick,
      // so the answer, and the call the caller then makes, are not late by the rest of the turn.
      deferReserve: (flush) => process.nextTick(flush),
    });
  }

  limit(request: LimitRequest): Promise<LimitResult> {
    return this.batcher.limit(request);
  }

  /**
   * Concurrency leases (core's `evaluateLease()`): the lease script on the sorted set `${key}:lease`, atomic, on
   * Redis TIME (or `request.now` with `clock: 'client'`). Operations issued in one turn of the event loop share one
   * call (up to 64; on a Cluster only those of one hash tag), each atomic and in order, whatever `batch` says: a
   * lease call is never batched with decisions. Rejects with INVALID_OPTION, sending nothing, when the id is not 1
   * to 64 characters of letters, digits, '_' or '-'.
   */
  lease(request: LeaseRequest): Promise<LeaseResult> {
    this.leaseScript ??= new LeaseBatcher({
      clock: this.clock,
      commands: {
        evalsha: (keys, args) => this.send('evalsha', [LEASE_SCRIPT_SHA1, keys.length, keys, args]),
        eval: (keys, args) => this.send('eval', [LEASE_SCRIPT, keys.length, keys, args]),
      },
      where: 'redisStore.lease',
      group: this.client.cluster ? hashTag : undefined,
      // At the end of this turn of the event loop: the acquires and releases of every callback that ran in it
      // share a call (process.nextTick sent those of one callback; in the fleet bench, 4 processes × 64 lanes,
      // the turn took 30% less client CPU and 20% less Redis CPU per acquire). No timer: an idle loop runs it at once.
      defer: (flush) => setImmediate(flush),
    });
    return this.leaseScript.lease(request);
  }

  async reset(key: string, ruleIds: readonly string[]): Promise<void> {
    if (ruleIds.length === 0) return;
    // One DEL: the keys share the identity's hash tag, so this is a single-slot command on a Cluster too.
    const keys = ruleIds.map((id) => `${key}:${id}`);
    await this.gate.run(() => this.client.send('del', keys));
  }

  private readonly call = async (keys: string[], args: string[]): Promise<unknown> => {
    if (this.useFunction) {
      try {
        return await this.send('fcall', [LIMIT_FUNCTION, keys.length, keys, args]);
      } catch (error) {
        // Both answers mean the function did not run, so running the decisions once more cannot count twice.
        // Any other error may have run it, or not: never retried, the limiters' failure policies decide.
        if (isFunctionMissing(error)) {
          await this.loadFunction();
          if (this.useFunction) return await this.send('fcall', [LIMIT_FUNCTION, keys.length, keys, args]);
        } else if (isUnsupported(error)) {
          this.useFunction = false;
        } else {
          throw error;
        }
      }
    }
    return runScript(this.script, keys, args);
  };

  /**
   * Sends one command through the client's adapter (clients/: for ioredis, its key prefix and friendly error
   * stacks, never its auto-pipelining), through the connection gate: never into the client's offline queue (see
   * connection-gate.ts). Arrays in `args` stand for their items.
   */
  private send(name: string, args: Array<string | number | string[]>): Promise<unknown> {
    return this.gate.run(() => this.client.send(name, args));
  }

  /** FUNCTION LOAD, once for every call waiting on it; a server that refuses Functions turns them off. */
  private loadFunction(): Promise<void> {
    this.loading ??= this.send('function', ['LOAD', LIMIT_LIBRARY])
      .then(
        () => undefined,
        (error: unknown) => {
          if (error instanceof Error && /already exists/i.test(error.message)) return; // another client loaded it
          if (isUnsupported(error)) {
            this.useFunction = false;
            return;
          }
          throw error;
        },
      )
      .finally(() => {
        this.loading = undefined;
      });
    return this.loading;
  }
}

/**
 * The Redis Cluster hash tag all of a request's keys share (keys with one tag always share a slot), or undefined
 * when they do not share one: such a request travels, and on a Cluster fails with CROSSSLOT, alone.
 */
function hashTagOf(request: LimitRequest): string | undefined {
  const { key, rules } = request;
  const tag = hashTag(`${key}:${rules[0]!.id}`);
  if (tag === undefined) return undefined;
  for (let i = 1; i < rules.length; i++) if (hashTag(`${key}:${rules[i]!.id}`) !== tag) return undefined;
  return tag;
}

/** Redis's rule: the text between the first '{' and the next '}', when not empty. */
function hashTag(key: string): string | undefined {
  const open = key.indexOf('{');
  if (open < 0) return undefined;
  const close = key.indexOf('}', open + 1);
  if (close <= open + 1) return undefined;
  return key.slice(open + 1, close);
}

/** Redis 7 answers FCALL of an unknown function (fresh, restarted or FUNCTION FLUSHed server) this way. */
function isFunctionMissing(error: unknown): boolean {
  return error instanceof Error && /^ERR Function not found/i.test(error.message);
}

/** No Functions here: Redis before 7 (unknown command) or an ACL without FCALL or FUNCTION. */
function isUnsupported(error: unknown): boolean {
  return (
    error instanceof Error &&
    (/^ERR unknown (command|subcommand)/i.test(error.message) || /^NOPERM .*'(fcall|function)/i.test(error.message))
  );
}
