import type { CircuitBreakerOptions, CircuitState } from './circuit-breaker.js';
import { decide, decideOne, type Decision } from './decision.js';
import { withDeadline } from './deadline.js';
import { durationOption, type Duration, type DurationRange } from './duration.js';
import { SluiceError, describe } from './errors.js';
import {
  Failover,
  RENAMED_POLICY_OPTIONS,
  asStoreError,
  checkStore,
  createFailurePolicy,
  degrade,
  failOpenOrClosed,
  isPromise,
  type FailurePolicy,
  type StoreErrorPolicy,
} from './failure-policy.js';
import { MAX_VERBATIM_IDENTITY, hash32, identityKey } from './identity.js';
import { NEVER, isStepMode, type Mode, type StepMode } from './algorithm.js';
import { ALGORITHM_NAMES } from './algorithm-names.js';
import type { ResolvedRule, Rule } from './rules.js';
import type { FastPath, FastPathStore, FastRequest, LimitRequest, LimitResult, RuleAnswer, Store, SyncStore } from './store.js';
import { rejectUnknownOptions, requireObject } from './validate.js';
import { waitForSlot, type WaitOptions } from './wait.js';
import { notify, performanceNow } from './observe.js';

/** `enforce` denies; `shadow` counts and reports but never denies (dark launch); `off` is the kill switch. */
export type LimiterMode = 'enforce' | 'shadow' | 'off';

export type { StoreErrorPolicy };

export interface LimiterOptions<S extends Store = Store> {
  store: S;
  /** One rule, or several that must all pass ("10 per second and 10,000 per day"). */
  rules: Rule | readonly Rule[];
  /** Namespaces this limiter's keys; two limiters on one store never share state. @default 'default' */
  name?: string;
  /** Key prefix for every limiter on the store. @default 'sluice' */
  prefix?: string;
  /** Epoch milliseconds. Inject a fake clock in tests. @default Date.now */
  clock?: () => number;
  /** @default 'enforce' */
  mode?: LimiterMode;
  /** Per-identity rules (custom quotas). Return undefined for the limiter's rules. Keep rule ids the same to keep state. */
  quota?: (identity: string) => Rule | readonly Rule[] | undefined;
  /**
   * Deadline for one store call (and for an asynchronous fallback store), async stores only. A healthy local
   * Redis answers in well under a millisecond and a cross-zone one in a few, so 250 ms is far beyond any normal
   * answer yet rides out a GC pause or a reconnect blip; it bounds what a dead or hung store adds to a request
   * to a quarter second. Milliseconds or a string like `'250ms'`. See "Failure policy" in core's README.
   * @default '250ms'
   */
  timeout?: Duration;
  /**
   * `'allow'` fails open, `'deny'` fails closed, a store (e.g. `memoryStore()`) keeps limiting locally. Every
   * answer given by the policy has `degraded: true` and `error.code` STORE_TIMEOUT, STORE_ERROR or CIRCUIT_OPEN.
   * @default 'allow' (fail open, so a store outage does not become an API outage)
   */
  onStoreError?: StoreErrorPolicy;
  /** Stop calling a failing store for a while. `false` turns it off. @default { failureThreshold: 5, cooldown: '2s' } */
  circuitBreaker?: CircuitBreakerOptions | false;
  /**
   * Called after every decision with what was decided and how long it took (metrics, logs, audits; see
   * `@sluice/otel`). It runs inline: keep it cheap. An exception it throws is swallowed, never the caller's.
   * Unset, it costs nothing (`pnpm bench memory`).
   */
  onDecision?: (event: DecisionEvent) => void;
}

/** What `onDecision` receives. */
export interface DecisionEvent {
  /** The limiter's name. */
  readonly limiter: string;
  readonly operation: 'limit' | 'peek' | 'refund' | 'take' | 'reserve';
  readonly identity: string;
  readonly decision: Decision;
  /** From the call to its answer, in ms (fractional where the runtime's performance.now() is). */
  readonly durationMs: number;
}

/** The changes `configure()` accepts. */
export interface LimiterChanges {
  rules?: Rule | readonly Rule[];
  mode?: LimiterMode;
  /**
   * Rules for single identities, over the limiter's rules and over `quota` (per-customer quotas set at run time,
   * e.g. from the shared store by `watchConfig`). Replaces the previous overrides; an empty map removes them.
   */
  overrides?: ReadonlyMap<string, Rule | readonly Rule[]>;
}

export interface LimitOptions {
  /** Weight of this request, a non-negative integer. 0 reads without consuming. @default 1 */
  cost?: number;
}

export interface TakeOptions {
  /** Most units to take, a non-negative integer. @default 1 */
  cost?: number;
}

export interface ReserveOptions {
  /** Units to book, a non-negative integer. @default 1 */
  cost?: number;
  /** Longest wait accepted (ms or a string like `'5s'`, from 0): a booking that would start later is refused. */
  maxWait: Duration;
}

export interface Limiter {
  readonly name: string;
  readonly rules: readonly Rule[];
  readonly mode: LimiterMode;
  /** The store this limiter decides on (adapters name it in their warnings). */
  readonly store: Store;
  /** State of the circuit breaker in front of the store. */
  readonly circuit: CircuitState;
  /** Takes `cost` from every rule if all have room; otherwise takes nothing. */
  limit(identity: string, options?: LimitOptions): Promise<Decision>;
  /** Whether `cost` (default 1) would pass now, without taking anything. */
  peek(identity: string, options?: LimitOptions): Promise<Decision>;
  /** Gives `cost` back, e.g. when the work it paid for was not done. */
  refund(identity: string, options?: LimitOptions): Promise<Decision>;
  /** Forgets an identity's state in every rule. */
  reset(identity: string): Promise<void>;
  /** Per-identity rules set by `configure({ overrides })`. */
  readonly overrides: ReadonlyMap<string, readonly Rule[]>;
  /** Changes rules, mode or per-identity overrides at run time, validated like the constructor; counters are kept per rule id. */
  configure(changes: LimiterChanges): void;
  /**
   * Takes as many units as fit now, up to `cost`, from every rule alike; `granted` says how many (0 is an
   * answer, not an error: `allowed` is false and `retryAfter` says when one unit fits). Needs a store that
   * announces `take` (memory, SQLite, Redis, Upstash); others reject with UNSUPPORTED_OPERATION.
   * @example const { granted } = await limiter.take('tier:a', { cost: 50 });
   */
  take(identity: string, options?: TakeOptions): Promise<Decision>;
  /**
   * Books `cost` at the earliest time it fits on every rule, if that is within `maxWait`; `startAt` says when
   * to start (wait `startAt − now`). Later requests queue behind the booking. Denied (nothing booked) when the
   * start is further away. Needs a store that announces `reserve` (memory, SQLite, Redis, Upstash).
   * @example const d = await limiter.reserve('api.example.com', { maxWait: '5s' }); if (d.allowed) await sleep(d.startAt - d.now);
   */
  reserve(identity: string, options: ReserveOptions): Promise<Decision>;
  /**
   * Waits for a slot instead of being refused: books it with `reserve` (one atomic step in the shared store, so
   * waiters across processes queue instead of racing) and resolves at its start. Rejects with WAIT_TOO_LONG
   * (nothing booked) when the slot is further than `maxWait`, and with ABORTED when `signal` aborts (the booking
   * is given back when every rule is a bucket or GCRA). Needs a store that announces `reserve`.
   * @example await limiter.wait('api.example.com', { maxWait: '30s' }); await fetch(url);
   */
  wait(identity: string, options: WaitOptions): Promise<Decision>;
  /** `wait`, then runs `fn` and returns its result: `await limiter.schedule('api.example.com', () => fetch(url), { maxWait: '30s' })`. */
  schedule<T>(identity: string, fn: () => T | Promise<T>, options: WaitOptions): Promise<T>;
}

/** A limiter over a synchronous store also answers without a promise. */
export interface SyncLimiter extends Limiter {
  limitSync(identity: string, options?: LimitOptions): Decision;
  peekSync(identity: string, options?: LimitOptions): Decision;
  refundSync(identity: string, options?: LimitOptions): Decision;
  takeSync(identity: string, options?: TakeOptions): Decision;
  reserveSync(identity: string, options: ReserveOptions): Decision;
}

const KNOWN = ['store', 'rules', 'name', 'prefix', 'clock', 'mode', 'quota', 'timeout', 'onStoreError', 'circuitBreaker', 'onDecision'];
const OPERATIONS: Readonly<Record<Mode, DecisionEvent['operation']>> = { consume: 'limit', peek: 'peek', refund: 'refund', take: 'take', reserve: 'reserve' };

const NAME_PATTERN = /^[A-Za-z0-9_.-]{1,64}$/;
/** Latest time a clock may return: 2^47 ms, about the year 6429; keeps every time sum of the steps below 2^53. */
const MAX_CLOCK_MS = 2 ** 47;
/** Identities per generation of the key cache: two generations hold at most twice this many keys. */
const KEY_CACHE_SIZE = 32768;

/**
 * Builds a limiter. Everything is validated here, once; the hot path only checks identity and cost.
 * @example
 * const limiter = createLimiter({ store: memoryStore(), rules: tokenBucket({ capacity: 20, refillRate: 10 }) });
 * const decision = await limiter.limit('user:42');
 */
export function createLimiter<S extends Store>(options: LimiterOptions<S>): S extends SyncStore ? SyncLimiter : Limiter {
  return new LimiterImpl(options) as unknown as S extends SyncStore ? SyncLimiter : Limiter;
}

class LimiterImpl implements SyncLimiter {
  readonly name: string;
  readonly store: Store;
  private readonly keyPrefix: string;
  private readonly clock: () => number;
  private readonly quota: LimiterOptions['quota'];
  private readonly policy: FailurePolicy;
  private readonly quotaCache = new WeakMap<object, readonly Rule[]>();
  private readonly cacheKeys: boolean;
  /** The store's fast path over this limiter's keys (a FastPathStore, see store.ts): single-rule step-mode requests, into `answer`. */
  private readonly fastPath: FastPath | undefined;
  private readonly answer: RuleAnswer = { allowed: true, remaining: 0, resetAt: 0, retryAt: 0 };
  /** The two ways of running the store, made once (the policy calls them; no closure per decision). */
  private readonly callLimit = (request: LimitRequest): LimitResult | Promise<LimitResult> => this.store.limit(request);
  private readonly callLimitOne = (request: LimitRequest): RuleAnswer => {
    this.fastPath!.limitOne(request as IdentityRequest, this.answer);
    return this.answer;
  };
  private keys = new Map<string, string>();
  private previousKeys = new Map<string, string>();
  private currentRules!: readonly Rule[];
  private currentMode!: LimiterMode;
  private currentOverrides: ReadonlyMap<string, readonly Rule[]> = new Map();
  private readonly onDecision: ((event: DecisionEvent) => void) | undefined;
  /**
   * The rule when every `limit`/`limitSync` call without options can go straight to the fast path (`one`): a
   * FastPathStore, a synchronous failure policy, no quota, one unstaggered rule, not switched off. Set by configure().
   */
  private fastRule: Rule | undefined;

  constructor(raw: LimiterOptions) {
    const options = requireObject(raw, 'createLimiter') as unknown as LimiterOptions;
    rejectUnknownOptions(options, KNOWN, 'createLimiter', RENAMED_POLICY_OPTIONS);
    this.store = checkStore(options.store, 'createLimiter: store');
    const { operations } = this.store.capabilities;
    if (!Array.isArray(operations) || !operations.includes('limit') || !operations.includes('reset')) {
      throw new SluiceError('INVALID_OPTION', `createLimiter: store.capabilities.operations must list 'limit' and 'reset', got ${describe(operations)}`);
    }
    this.cacheKeys = this.store.capabilities.synchronous === true || this.store.capabilities.memoryFirst === true;
    this.name = checkName(options.name ?? 'default', 'name');
    const prefix = checkName(options.prefix ?? 'sluice', 'prefix');
    this.keyPrefix = `${prefix}:${this.name}:{`;
    const bind = (this.store as Partial<FastPathStore>).bindFastPath;
    this.fastPath = this.store.capabilities.synchronous === true && this.store.capabilities.clock === 'client' && typeof bind === 'function' ? bind.call(this.store, this.keyPrefix) : undefined;
    if (options.clock !== undefined && typeof options.clock !== 'function') {
      throw new SluiceError('INVALID_OPTION', `createLimiter: clock must be a function returning epoch ms, got ${describe(options.clock)}`);
    }
    this.clock = options.clock ?? Date.now;
    if (options.quota !== undefined && typeof options.quota !== 'function') {
      throw new SluiceError('INVALID_OPTION', `createLimiter: quota must be a function (identity) => rules | undefined, got ${describe(options.quota)}`);
    }
    this.quota = options.quota;
    if (options.onDecision !== undefined && typeof options.onDecision !== 'function') {
      throw new SluiceError('INVALID_OPTION', `createLimiter: onDecision must be a function (event) => void, got ${describe(options.onDecision)}`);
    }
    this.onDecision = options.onDecision;
    this.policy = createFailurePolicy({
      timeout: options.timeout,
      onStoreError: options.onStoreError,
      circuitBreaker: options.circuitBreaker,
      clock: () => this.now(),
      caller: 'createLimiter',
    });
    // Checked here too: configure() reads a missing `rules` as "keep the current ones", and there are none yet.
    this.configure({ rules: checkRules(options.rules, 'rules'), mode: options.mode ?? 'enforce' });
  }

  /**
   * The limiter's clock, checked on every read: every algorithm and executor works in whole milliseconds below
   * 2^53, and a fractional, negative, NaN, infinite or far-future time would otherwise be stored as a state no
   * executor can read back, which restarts every identity from a full bucket (limiting silently off).
   * Fractions are floored (`performance.timeOrigin + performance.now()` is a fine clock); anything else throws.
   */
  private now(): number {
    const t = this.clock();
    if (typeof t === 'number' && t >= 0 && t <= MAX_CLOCK_MS) return Math.floor(t);
    throw new SluiceError(
      'INVALID_CLOCK',
      `createLimiter: clock must return epoch milliseconds, a finite number from 0 to ${MAX_CLOCK_MS} (fractions are floored), got ${describe(t)}`,
    );
  }

  get rules(): readonly Rule[] {
    return this.currentRules;
  }

  get mode(): LimiterMode {
    return this.currentMode;
  }

  get circuit(): CircuitState {
    return this.policy.circuit;
  }

  get overrides(): ReadonlyMap<string, readonly Rule[]> {
    return this.currentOverrides;
  }

  configure(changes: LimiterChanges): void {
    const known = requireObject(changes, 'configure');
    rejectUnknownOptions(known, ['rules', 'mode', 'overrides'], 'configure');
    const rules = changes.rules === undefined ? this.currentRules : checkRules(changes.rules, 'rules');
    const mode = changes.mode ?? this.currentMode;
    if (mode !== 'enforce' && mode !== 'shadow' && mode !== 'off') {
      throw new SluiceError('INVALID_OPTION', `mode must be 'enforce', 'shadow' or 'off', got ${describe(mode)}`);
    }
    const overrides = changes.overrides === undefined ? this.currentOverrides : checkOverrides(changes.overrides);
    this.currentRules = rules;
    this.currentMode = mode;
    this.currentOverrides = overrides;
    const only = rules.length === 1 ? rules[0]! : undefined;
    const plain = this.quota === undefined && overrides.size === 0 && this.onDecision === undefined;
    this.fastRule = this.fastPath !== undefined && this.policy.synchronous && plain && only !== undefined && !only.stagger && mode !== 'off' ? only : undefined;
  }

  limit(identity: string, options?: LimitOptions): Promise<Decision> {
    const rule = this.fastRule;
    if (rule === undefined || options !== undefined) return this.run(identity, options, 'consume');
    try {
      return Promise.resolve(this.one(identity, rule));
    } catch (error) {
      return Promise.reject(error);
    }
  }

  peek(identity: string, options?: LimitOptions): Promise<Decision> {
    return this.run(identity, options, 'peek');
  }

  refund(identity: string, options?: LimitOptions): Promise<Decision> {
    return this.run(identity, options, 'refund');
  }

  take(identity: string, options?: TakeOptions): Promise<Decision> {
    return this.run(identity, options, 'take');
  }

  reserve(identity: string, options: ReserveOptions): Promise<Decision> {
    return this.run(identity, options, 'reserve');
  }

  wait(identity: string, options: WaitOptions): Promise<Decision> {
    return waitForSlot(this, identity, options);
  }

  async schedule<T>(identity: string, fn: () => T | Promise<T>, options: WaitOptions): Promise<T> {
    if (typeof fn !== 'function') throw new SluiceError('INVALID_OPTION', `schedule: fn must be a function () => value, got ${describe(fn)}`);
    await this.wait(identity, options);
    return fn();
  }

  limitSync(identity: string, options?: LimitOptions): Decision {
    const rule = this.fastRule;
    return rule === undefined || options !== undefined ? this.runSync(identity, options, 'consume', 'limitSync') : this.one(identity, rule);
  }

  peekSync(identity: string, options?: LimitOptions): Decision {
    return this.runSync(identity, options, 'peek', 'peekSync');
  }

  refundSync(identity: string, options?: LimitOptions): Decision {
    return this.runSync(identity, options, 'refund', 'refundSync');
  }

  takeSync(identity: string, options?: TakeOptions): Decision {
    return this.runSync(identity, options, 'take', 'takeSync');
  }

  reserveSync(identity: string, options: ReserveOptions): Decision {
    return this.runSync(identity, options, 'reserve', 'reserveSync');
  }

  async reset(identity: string): Promise<void> {
    const rules = this.rulesFor(identity);
    const key = this.keyPrefix + identityKey(identity) + '}';
    // Not a decision, so no policy answers it: a failure or a miss of the deadline rejects with a SluiceError.
    try {
      const pending = this.store.reset(key, rules.map((r) => r.id));
      if (isPromise(pending)) await withDeadline(pending, this.policy.timeoutMs);
    } catch (error) {
      throw asStoreError(error);
    }
  }

  /**
   * The asynchronous methods. Not an async function: the answer of a synchronous store (memory, SQLite) is
   * wrapped in one resolved promise rather than an async function's frame and promise. Anything thrown on the
   * way (a bad identity or cost) still comes back as a rejection, never as a synchronous throw.
   */
  private run(identity: string, options: LimitOptions | undefined, mode: Mode): Promise<Decision> {
    try {
      const decision = this.decision(identity, options, mode, false);
      return isPromise(decision) ? decision : Promise.resolve(decision);
    } catch (error) {
      return Promise.reject(error);
    }
  }

  /** The *Sync methods: refused up front, before anything is counted, when an answer could need a promise. */
  private runSync(identity: string, options: LimitOptions | undefined, mode: Mode, method: string): Decision {
    // The async method's name is only built on the way to an error: this runs on every synchronous decision.
    if (!this.store.capabilities.synchronous) {
      throw new SluiceError('UNSUPPORTED_OPERATION', `${method} needs a synchronous store (memory, SQLite); use ${method.slice(0, -4)}()`);
    }
    if (!this.policy.synchronous) {
      // Falling back would need a promise, and answering then retrying through limit() would consume twice and
      // count the store's failure twice.
      throw new SluiceError(
        'UNSUPPORTED_OPERATION',
        `${method} cannot be used when onStoreError is an asynchronous store (it could only answer a failure with a promise); use ${method.slice(0, -4)}()`,
      );
    }
    return this.decision(identity, options, mode, true) as Decision;
  }

  /**
   * The one pipeline every decision takes: resolve the rules, build the request, run the store under the failure
   * policy, shape the decision. The only seam is how the store is run: a single-rule step-mode request on a
   * FastPathStore goes through `limitOne` into a reused answer (`pnpm bench memory` shows it pays), everything
   * else through `limit(request)`; both are run by the same policy and shaped by the same step.
   */
  private decision(identity: string, options: LimitOptions | undefined, mode: Mode, sync: boolean): Decision | Promise<Decision> {
    if (this.onDecision !== undefined) return this.observed(identity, options, mode, sync);
    return this.decideNow(identity, options, mode, sync);
  }

  /** `decideNow`, timed and reported to `onDecision` (whose exceptions are not the caller's). */
  private observed(identity: string, options: LimitOptions | undefined, mode: Mode, sync: boolean): Decision | Promise<Decision> {
    const started = performanceNow();
    const decided = this.decideNow(identity, options, mode, sync);
    if (!isPromise(decided)) return this.report(identity, mode, decided, started);
    return decided.then((decision) => this.report(identity, mode, decision, started));
  }

  private report(identity: string, mode: Mode, decision: Decision, started: number): Decision {
    notify(this.onDecision!, { limiter: this.name, operation: OPERATIONS[mode], identity, decision, durationMs: performanceNow() - started });
    return decision;
  }

  private decideNow(identity: string, options: LimitOptions | undefined, mode: Mode, sync: boolean): Decision | Promise<Decision> {
    if (!isStepMode(mode)) this.checkMode(options, mode);
    const rules = this.rulesFor(identity);
    const request = this.request(identity, options, mode, rules);
    if (this.currentMode === 'off') return withModeFields(disabled(rules, request.now), request);
    const call: (request: LimitRequest) => LimitResult | RuleAnswer | Promise<LimitResult> = request instanceof IdentityRequest ? this.callLimitOne : this.callLimit;
    if (sync) return this.shape(rules, request, this.policy.runSync(request, call as (request: LimitRequest) => LimitResult | RuleAnswer));
    const answer = this.policy.run(request, call);
    return isPromise(answer) ? this.later(answer, rules, request) : this.shape(rules, request, answer);
  }

  /**
   * `decision()` for a `limit`/`limitSync` call of cost 1 when `fastRule` is set: the same steps (request, store
   * under the policy, shape), with what configure() already knows left out. The pipeline's one seam, kept because
   * `pnpm bench memory` shows it pays.
   */
  private one(identity: string, rule: Rule): Decision {
    if (typeof identity !== 'string' || identity.length === 0) identityKey(identity);
    const rules = this.currentRules;
    const request = new IdentityRequest(identity, this.keyPrefix, rules, 1, 'consume', this.now());
    const answer = this.policy.runSync(request, this.callLimitOne);
    if (answer !== this.answer) return this.shape(rules, request, answer);
    const decision = decideOne(rule, answer, request.now);
    return decision.allowed || this.currentMode !== 'shadow' ? decision : { ...decision, allowed: true, reason: 'shadow' };
  }

  /** Shapes an answer that comes later. A method of its own: a closure in decision() would make every call allocate a context. */
  private later(answer: Promise<LimitResult | RuleAnswer | Failover>, rules: readonly Rule[], request: LimitRequest): Promise<Decision> {
    return answer.then((a) => this.shape(rules, request, a));
  }

  /** Refuses a mode the store does not announce (before anything is counted); reserve needs its options. */
  private checkMode(options: TakeOptions | ReserveOptions | undefined, mode: 'take' | 'reserve'): void {
    if (!this.store.capabilities.operations.includes(mode)) {
      throw new SluiceError(
        'UNSUPPORTED_OPERATION',
        `${mode}: the store does not support the ${mode} mode (its capabilities.operations lack '${mode}'); sluice's memory, SQLite, Redis and Upstash stores do`,
      );
    }
    if (mode === 'reserve' && (typeof options !== 'object' || options === null)) {
      throw new SluiceError('INVALID_OPTION', `reserve options must be an object such as { maxWait: '1s' }, got ${describe(options)}`);
    }
  }

  private rulesFor(identity: string): readonly Rule[] {
    if (this.currentOverrides.size > 0) {
      const override = this.currentOverrides.get(identity);
      if (override !== undefined) return override;
    }
    if (this.quota === undefined) return this.currentRules;
    const custom = this.quota(identity);
    if (custom === undefined) return this.currentRules;
    // Quota functions usually return one of a few shared rule lists: validate each list once.
    let checked = this.quotaCache.get(custom);
    if (checked === undefined) {
      checked = checkRules(custom, 'quota(identity)');
      this.quotaCache.set(custom, checked);
    }
    return checked;
  }

  /**
   * The store key of an identity. Building `prefix:name:{identity}` makes a rope string, and V8 flattens and
   * hashes a rope in its runtime on its first Map lookup (about 200 ns, the largest cost of a memory-store
   * decision); handing an in-process store the same string again for a recent identity keeps its cached hash.
   * Only for synchronous and memory-first stores (for others a remote round trip dwarfs it) and identities short enough to be kept verbatim
   * (so the cache's memory is bounded): two generations of at most KEY_CACHE_SIZE identities each.
   */
  private keyFor(identity: string): string {
    if (!this.cacheKeys) return this.keyPrefix + identityKey(identity) + '}';
    let key = this.keys.get(identity);
    if (key !== undefined) return key;
    key = this.previousKeys.get(identity) ?? this.keyPrefix + identityKey(identity) + '}';
    if (identity.length > MAX_VERBATIM_IDENTITY) return key;
    if (this.keys.size >= KEY_CACHE_SIZE) {
      this.previousKeys = this.keys;
      this.keys = new Map();
    }
    this.keys.set(identity, key);
    return key;
  }

  private request(identity: string, options: LimitOptions | undefined, mode: Mode, rules: readonly Rule[]): LimitRequest {
    if (this.fastPath !== undefined && rules.length === 1 && !rules[0]!.stagger && isStepMode(mode)) {
      // The fast path finds the identity without its key (the store builds it only for an identity it does not hold).
      if (typeof identity !== 'string' || identity.length === 0) identityKey(identity);
      const cost = options === undefined ? 1 : readCost(options, mode);
      return new IdentityRequest(identity, this.keyPrefix, rules, cost, cost === 0 ? 'peek' : mode, this.now());
    }
    const key = this.keyFor(identity);
    const cost = options === undefined ? 1 : readCost(options, mode);
    const request: LimitRequest = { key, rules: hasStagger(rules) ? stagger(rules, identity) : rules, cost, mode: cost === 0 && isStepMode(mode) ? 'peek' : mode, now: this.now() };
    return mode === 'reserve' ? { ...request, maxWaitMs: readMaxWait(options as ReserveOptions) } : request;
  }

  /**
   * The last step: the store's answer (or the policy's) as a decision. Shadow mode lets a denial through (even a
   * fail-closed one: shadow mode never refuses); a policy answer is marked degraded; take and reserve answers
   * carry `granted` / `startAt` whoever decided.
   */
  private shape(rules: readonly Rule[], request: LimitRequest, answer: LimitResult | RuleAnswer | Failover): Decision {
    let decision: Decision;
    if (answer === this.answer) decision = this.shaped(decideOne(rules[0]!, this.answer, request.now));
    else if (answer instanceof Failover) {
      decision =
        answer.result !== undefined
          ? degrade(this.shaped(decide(rules, answer.result.outcomes, answer.result.now)), answer.error)
          : this.shaped(failOpenOrClosed(answer.verdict!, rules, request.now, answer.error));
    } else {
      const result = answer as LimitResult;
      const decided = decide(rules, result.outcomes, result.now);
      decision = this.shaped(result.error === undefined ? decided : degrade(decided, result.error));
    }
    return withModeFields(decision, request);
  }

  private shaped(decision: Decision): Decision {
    if (this.currentMode === 'shadow' && !decision.allowed) return { ...decision, allowed: true, reason: 'shadow' };
    return decision;
  }
}

/**
 * A fast-path request (see FastRequest in store.ts). Its key is built on first read: a store that holds the
 * identity finds it by the identity alone, and building `prefix:name:{identity}` makes a rope string that V8
 * flattens and hashes on its first Map lookup, the largest cost of an in-process decision.
 */
class IdentityRequest implements FastRequest {
  private builtKey: string | undefined = undefined;

  constructor(
    readonly identity: string,
    private readonly keyPrefix: string,
    readonly rules: readonly Rule[],
    readonly cost: number,
    readonly mode: StepMode,
    readonly now: number,
  ) {}

  get key(): string {
    return (this.builtKey ??= this.keyPrefix + identityKey(this.identity) + '}');
  }
}

/**
 * Fills `granted` / `startAt` on answers that did not come from the store's evaluation (limiter off, failure
 * policy): an allowed answer grants the whole cost and starts now; a denied one grants nothing and starts when
 * `retryAfter` says (-1 when never).
 */
function withModeFields(decision: Decision, request: LimitRequest): Decision {
  if (request.mode === 'take') {
    if (decision.granted !== undefined) return decision;
    return { ...decision, granted: decision.allowed ? request.cost : 0 };
  }
  if (request.mode !== 'reserve' || decision.startAt !== undefined) return decision;
  const wait = decision.allowed ? 0 : decision.retryAfter;
  return { ...decision, startAt: Number.isFinite(wait) ? decision.now + wait : NEVER };
}

function disabled(rules: readonly Rule[], now: number): Decision {
  const first = rules[0]!;
  return {
    allowed: true,
    reason: 'disabled',
    limit: first.limit,
    remaining: first.limit,
    resetAt: now,
    retryAfter: 0,
    degraded: false,
    rule: first.id,
    rules: [],
    now,
  };
}

function hasStagger(rules: readonly Rule[]): boolean {
  for (let i = 0; i < rules.length; i++) if (rules[i]!.stagger) return true;
  return false;
}

function stagger(rules: readonly Rule[], identity: string): readonly ResolvedRule[] {
  return rules.map((r) => (r.stagger ? staggered(r, identity) : r));
}

function staggered(rule: Rule, identity: string): ResolvedRule {
  const params = rule.params as { limit: number; windowMs: number; offsetMs: number };
  return { ...rule, params: { ...params, offsetMs: hash32(identity) % params.windowMs } } as ResolvedRule;
}

function checkName(value: unknown, field: string): string {
  if (typeof value !== 'string' || !NAME_PATTERN.test(value)) {
    throw new SluiceError(
      'INVALID_OPTION',
      `createLimiter: ${field} must be 1 to 64 characters of letters, digits, '_', '.' or '-', got ${describe(value)}`,
    );
  }
  return value;
}

const RULE_ALGORITHMS: ReadonlySet<string> = new Set(ALGORITHM_NAMES);

function checkRules(value: unknown, field: string): readonly Rule[] {
  const list = (Array.isArray(value) ? value : [value]) as unknown[];
  if (list.length === 0) {
    throw new SluiceError('INVALID_OPTION', `${field} must hold at least one rule, such as tokenBucket({...})`);
  }
  const ids = new Set<string>();
  for (const rule of list) {
    const candidate = rule as Rule | undefined;
    if (typeof candidate !== 'object' || candidate === null || !RULE_ALGORITHMS.has(candidate.algorithm)) {
      throw new SluiceError('INVALID_OPTION', `${field} must be rules made by fixedWindow(), tokenBucket() and the like, got ${describe(rule)}`);
    }
    if (ids.has(candidate.id)) {
      throw new SluiceError('INVALID_OPTION', `${field}: two rules share the id ${JSON.stringify(candidate.id)}; give one of them an explicit id`);
    }
    ids.add(candidate.id);
  }
  return Object.freeze([...(list as Rule[])]);
}

function checkOverrides(value: unknown): ReadonlyMap<string, readonly Rule[]> {
  if (!(value instanceof Map)) {
    throw new SluiceError('INVALID_OPTION', `configure: overrides must be a Map from identity to rules, got ${describe(value)}`);
  }
  const checked = new Map<string, readonly Rule[]>();
  for (const [identity, rules] of value as Map<unknown, unknown>) {
    if (typeof identity !== 'string' || identity.length === 0) {
      throw new SluiceError('INVALID_OPTION', `configure: overrides keys must be non-empty identity strings, got ${describe(identity)}`);
    }
    checked.set(identity, checkRules(rules, `overrides[${JSON.stringify(identity.slice(0, 64))}]`));
  }
  return checked;
}

function readCost(options: LimitOptions, mode: Mode): number {
  checkLimitOptions(options, mode);
  const cost = options.cost;
  if (cost === undefined) return 1;
  if (!Number.isSafeInteger(cost) || cost < 0) {
    throw new SluiceError('INVALID_COST', `cost must be a non-negative integer, got ${describe(cost)}`);
  }
  return cost;
}

/** The options each mode accepts, and the error's prefix: constants, so a check that passes allocates nothing. */
const MODE_OPTIONS: Readonly<Record<Mode, { readonly known: readonly string[]; readonly where: string }>> = {
  consume: { known: ['cost'], where: 'limit options' },
  peek: { known: ['cost'], where: 'peek options' },
  refund: { known: ['cost'], where: 'refund options' },
  take: { known: ['cost'], where: 'take options' },
  reserve: { known: ['cost', 'maxWait'], where: 'reserve options' },
};
const RENAMED_RESERVE_OPTIONS: Readonly<Record<string, string>> = { maxWaitMs: 'maxWait' };
/** reserve's maxWait: up to 2^47 ms, the clock's own range, so `now + maxWait` stays exact. */
const MAX_WAIT_RANGE: DurationRange = { min: 0, max: MAX_CLOCK_MS };

/** Per-call options: `limit(id, 5)` or `{ weight: 5 }` would otherwise silently cost 1. */
function checkLimitOptions(options: LimitOptions, mode: Mode): void {
  if (typeof options !== 'object' || options === null) {
    throw new SluiceError('INVALID_OPTION', `limit options must be an object such as { cost: 2 }, got ${describe(options)}`);
  }
  const accepted = MODE_OPTIONS[mode];
  rejectUnknownOptions(options, accepted.known, accepted.where, mode === 'reserve' ? RENAMED_RESERVE_OPTIONS : undefined);
}

/** reserve's maxWait (required), in ms. */
function readMaxWait(options: ReserveOptions): number {
  return durationOption(options.maxWait, 'reserve options: maxWait', MAX_WAIT_RANGE);
}
