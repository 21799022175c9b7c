import type { LimitRequest, LimitResult } from '@sluice/core/store';
import { SluiceError } from '@sluice/core';
import { appendDecision, newCall, parseCallReply, type ScriptCallArguments } from './arguments.js';
import { jsonStringBytes } from './json-size.js';

/**
 * Runs one call of LIMIT_SCRIPT (EVALSHA, with the store's NOSCRIPT fallback) and resolves with its raw reply.
 * `requests` are the decisions the call carries, in order.
 */
export type ScriptCall = (keys: string[], args: string[], requests: readonly LimitRequest[]) => Promise<unknown>;

export interface LimitBatcherOptions {
  readonly clock: 'store' | 'client';
  readonly call: ScriptCall;
  /**
   * Most decisions one call carries; 1 sends every decision on its own, at once.
   * @default 64
   */
  readonly maxBatch?: number;
  /**
   * While none of this batcher's calls is waiting for its reply, send a call as soon as it holds a quarter of the
   * previous tick's wave of decisions (at least 8, at most `maxBatch`), so the server runs it while the client
   * still prepares the rest of the tick; once a call is in flight the server has work, and the rest of the tick
   * leaves in as few calls as `maxBatch` allows (every call costs CPU on both sides: with 64 decisions in flight,
   * sending every quarter wave as it filled made twice the calls, 0.07 per decision against 0.03, and cost about
   * 2 µs of client and 1.5 µs of Redis CPU more per decision). Worth it where a call's server time is comparable to the
   * client's (Redis); without it a tick's decisions leave in as few calls as `maxBatch` allows (where every call
   * costs a request: Upstash).
   * @default false
   */
  readonly splitWaves?: boolean;
  /**
   * Requests whose keys may share one call, e.g. the Redis Cluster hash slot (a script's keys must share a slot
   * there). `undefined` for a request that must travel alone. Without it, every request may share a call.
   */
  readonly group?: (request: LimitRequest) => string | number | undefined;
  /**
   * Calls `flush` sooner than `defer` for a tick that holds a `reserve`: its caller sleeps from the answer until
   * the booked start, so a late answer sends its call late (e.g. `process.nextTick` where `defer` waits for the end
   * of the turn). Unset: reserves wait for `defer` like every other decision.
   */
  readonly deferReserve?: (flush: () => void) => void;
  /**
   * Calls `flush` once the decisions issued together have arrived. The default waits for the microtask queue to
   * go quiet (a turn without a new decision, after 2 turns and at most 8): no timer, so a decision that is alone
   * is sent at once. Node code may pass `process.nextTick`, which runs after every pending microtask.
   */
  readonly defer?: (flush: () => void) => void;
  /**
   * Bounds a call that travels as one JSON array, `["EVAL", script, n, ...keys, ...args]` (Upstash's REST body):
   * `overheadBytes` is everything but the key count n and the keys and arguments (command, script or digest,
   * brackets and the commas around them), and a call leaves before its UTF-8 body would pass `limitBytes`. Each
   * key and argument is measured once, as it joins (json-size.ts). A decision whose call alone would pass the limit
   * fails alone with INVALID_OPTION, sending nothing. Unset: no size bound (a Redis connection has none that near).
   */
  readonly jsonBody?: { readonly limitBytes: number; readonly overheadBytes: number };
}

/** A script call's keys are unpacked onto Lua's C stack (about 8,000 slots): stay far below. */
const MAX_KEYS_PER_CALL = 1024;
/** The smallest call the batcher sends early, while more decisions of the tick may follow. */
const MIN_CHUNK = 8;
/** Microtask turns the default `defer` waits: at least, and at most while decisions keep arriving. */
const MIN_QUIET_TURNS = 2;
const MAX_QUIET_TURNS = 8;

interface Batch {
  readonly call: ScriptCallArguments;
  /** With `jsonBody`: bytes the call's keys and arguments take in the body, a comma each included. */
  bytes: number;
  readonly requests: LimitRequest[];
  readonly resolves: Array<(result: LimitResult) => void>;
  readonly rejects: Array<(error: unknown) => void>;
}

/**
 * Coalesces decisions issued together (in the same tick) into one script call: many decisions, one round trip,
 * one TIME, one MGET. Each decision is still executed atomically and in the order it was issued, each caller
 * gets its own result (or, when the call fails, the call's error: its limiter's failure policy then decides),
 * and nothing waits on a timer. Edge-safe: it only needs `queueMicrotask`.
 */
export class LimitBatcher {
  private readonly clock: 'store' | 'client';
  private readonly call: ScriptCall;
  private readonly maxBatch: number;
  private readonly splitWaves: boolean;
  private readonly group: ((request: LimitRequest) => string | number | undefined) | undefined;
  private readonly defer: (flush: () => void) => void;
  private readonly jsonBody: { readonly limitBytes: number; readonly overheadBytes: number } | undefined;
  /** The open batch when there is no `group`; otherwise `open` holds one per group. */
  private single: Batch | undefined;
  private readonly open = new Map<string | number, Batch>();
  private scheduled = false;
  private reserveScheduled = false;
  private readonly deferReserve: ((flush: () => void) => void) | undefined;
  private arrivals = 0;
  /** Decisions that arrived since the last flush: the size of this tick's wave of decisions. */
  private wave = 0;
  /** A call is sent as soon as it holds this many decisions while no call is in flight (see `splitWaves`). */
  private chunkSize: number;
  private seen = 0;
  private turns = 0;
  /** Calls sent and not yet answered. */
  private inFlight = 0;

  constructor(options: LimitBatcherOptions) {
    this.clock = options.clock;
    this.call = options.call;
    this.maxBatch = options.maxBatch ?? 64;
    this.splitWaves = options.splitWaves ?? false;
    this.chunkSize = this.splitWaves ? Math.min(this.maxBatch, MIN_CHUNK) : this.maxBatch;
    this.group = options.group;
    this.defer = options.defer ?? ((flush) => this.whenQuiet(flush));
    this.deferReserve = options.deferReserve;
    this.jsonBody = options.jsonBody;
  }

  /** Decides one request; the promise settles after the one call that carries it. */
  limit(request: LimitRequest): Promise<LimitResult> {
    if (this.maxBatch <= 1) return this.alone(request);
    let id: string | number | undefined;
    let batch: Batch | undefined;
    if (this.group === undefined) {
      batch = this.single;
    } else {
      id = this.group(request);
      if (id === undefined) return this.alone(request);
      batch = this.open.get(id);
    }
    if (batch !== undefined && batch.requests.length > 0 && batch.call.keys.length + request.rules.length > MAX_KEYS_PER_CALL) {
      this.send(this.close(batch, id));
      batch = undefined;
    }
    batch ??= this.openBatch(id);
    try {
      let over = this.append(batch, request);
      if (over !== undefined && batch.requests.length > 0) {
        // The call would pass the body limit with this decision: it leaves as it is, the decision starts the next.
        this.send(this.close(batch, id));
        over = this.append((batch = this.openBatch(id)), request);
      }
      if (over !== undefined) throw this.tooLarge(request, over);
    } catch (error) {
      // A request the script cannot run, or too large alone, fails alone, before joining: it appended nothing.
      if (batch.requests.length === 0) this.close(batch, id);
      return Promise.reject(error);
    }
    const joined = batch;
    const promise = new Promise<LimitResult>((resolve, reject) => {
      joined.resolves.push(resolve);
      joined.rejects.push(reject);
    });
    joined.requests.push(request);
    this.arrivals++;
    this.wave++;
    // Early only while no call is waiting for its reply (see splitWaves); a full call always leaves.
    if (joined.requests.length >= this.maxBatch || (joined.requests.length >= this.chunkSize && this.inFlight === 0)) {
      this.send(this.close(joined, id));
    } else if (!this.scheduled) {
      this.scheduled = true;
      this.defer(this.flush);
    }
    if (request.operation === 'reserve' && this.deferReserve !== undefined && !this.reserveScheduled) {
      this.reserveScheduled = true;
      this.deferReserve(this.flush);
    }
    return promise;
  }

  /**
   * Sends every open batch. With `splitWaves`, then sizes the next tick's early call from this tick's wave: a
   * quarter of it (at least MIN_CHUNK, at most maxBatch), so that Redis runs a wave's first call while the client
   * still prepares the rest (one call per wave made the two wait on each other: with 16 and 64 decisions in
   * flight, quarter waves made 1.2x and 1.5x the decisions per second).
   */
  private readonly flush = (): void => {
    this.scheduled = false;
    this.reserveScheduled = false;
    if (this.splitWaves) this.chunkSize = Math.max(Math.min(MIN_CHUNK, this.maxBatch), Math.min(this.maxBatch, Math.ceil(this.wave / 4)));
    this.wave = 0;
    if (this.single !== undefined) {
      const batch = this.single;
      this.single = undefined;
      this.send(batch);
    }
    if (this.open.size > 0) {
      const batches = [...this.open.values()];
      this.open.clear();
      for (const batch of batches) this.send(batch);
    }
  };

  private newBatch(): Batch {
    return { call: newCall(this.clock), bytes: 0, requests: [], resolves: [], rejects: [] };
  }

  private openBatch(id: string | number | undefined): Batch {
    const batch = this.newBatch();
    if (id === undefined) this.single = batch;
    else this.open.set(id, batch);
    return batch;
  }

  /**
   * Appends a decision to a batch and answers undefined; or, when the batch's body would pass `jsonBody.limitBytes`
   * with it, appends nothing and answers the bytes it would have taken. Throws appendDecision's refusals.
   */
  private append(batch: Batch, request: LimitRequest): number | undefined {
    const { call } = batch;
    if (this.jsonBody === undefined) {
      appendDecision(call, request);
      return;
    }
    const { keys, args, spec, now } = call;
    const keyCount = keys.length;
    const argCount = args.length;
    appendDecision(call, request);
    let added = 0;
    for (let i = keyCount; i < keys.length; i++) added += 1 + jsonStringBytes(keys[i]!);
    for (let i = argCount; i < args.length; i++) added += 1 + jsonStringBytes(args[i]!);
    const body = this.jsonBody.overheadBytes + String(keys.length).length + batch.bytes + added;
    if (body <= this.jsonBody.limitBytes) {
      batch.bytes += added;
      return;
    }
    keys.length = keyCount;
    args.length = argCount;
    call.spec = spec;
    call.now = now;
    return body;
  }

  private close(batch: Batch, id: string | number | undefined): Batch {
    if (id === undefined) {
      if (this.single === batch) this.single = undefined;
    } else if (this.open.get(id) === batch) {
      this.open.delete(id);
    }
    return batch;
  }

  private alone(request: LimitRequest): Promise<LimitResult> {
    const batch = this.newBatch();
    const requests = [request];
    try {
      const over = this.append(batch, request);
      if (over !== undefined) throw this.tooLarge(request, over);
      return this.call(batch.call.keys, batch.call.args, requests).then((reply) => parseCallReply(reply, requests, this.clock)[0]!);
    } catch (error) {
      return Promise.reject(error);
    }
  }

  private tooLarge(request: LimitRequest, bytes: number): SluiceError {
    return new SluiceError(
      'INVALID_OPTION',
      `a request for key ${JSON.stringify(request.key.slice(0, 60))}… alone would be ${bytes} bytes, over the store's limit of ${this.jsonBody!.limitBytes}: shorten the key`,
    );
  }

  private send(batch: Batch): void {
    const { requests, resolves, rejects } = batch;
    let pending: Promise<unknown>;
    this.inFlight++;
    try {
      pending = this.call(batch.call.keys, batch.call.args, requests);
    } catch (error) {
      pending = Promise.reject(error);
    }
    pending.then(
      (reply) => {
        this.inFlight--;
        let results: LimitResult[];
        try {
          results = parseCallReply(reply, requests, this.clock);
        } catch (error) {
          for (const reject of rejects) reject(error);
          return;
        }
        for (let i = 0; i < results.length; i++) resolves[i]!(results[i]!);
      },
      (error: unknown) => {
        this.inFlight--;
        for (const reject of rejects) reject(error);
      },
    );
  }

  /**
   * Default `defer`: flush once a microtask turn brought no new decision, after at least MIN_QUIET_TURNS turns and
   * at most MAX_QUIET_TURNS (callers whose promise chains run a few hops apart still share the call).
   */
  private whenQuiet(flush: () => void): void {
    this.seen = this.arrivals;
    this.turns = 0;
    const check = (): void => {
      this.turns++;
      const grew = this.arrivals !== this.seen;
      this.seen = this.arrivals;
      if (this.turns < MAX_QUIET_TURNS && (this.turns < MIN_QUIET_TURNS || grew)) {
        queueMicrotask(check);
        return;
      }
      flush();
    };
    queueMicrotask(check);
  }
}
