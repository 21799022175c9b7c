import type { CircuitState } from '../store/circuit-breaker.js';
import { combineOneOutcome, combineOutcomes, degrade, disabled, failOpenOrClosed, withOperationFields, type Decision } from './decision.js';
import { withDeadline } from '../shared/deadline.js';
import { readClock } from '../shared/clock.js';
import { describe } from '../shared/describe.js';
import { SluiceError } from '../shared/errors.js';
import { FailureAnswer, asStoreError, checkStore, createFailurePolicy, isPromise, type FailurePolicy } from '../store/failure-policy.js';
import { identityKey } from '../shared/identity.js';
import { IdentityRequest, KeyCache } from './key-cache.js';
import { hasStagger, stagger } from './stagger.js';
import { isStepOperation, type Operation } from '../algorithms/algorithm.js';
import { checkDenyList, type DenyEntry } from '../deny/entries.js';
import type { DenyLineage } from '../deny/lineage.js';
import type { Rule } from '../algorithms/rules.js';
import type { LimitRequest, LimitResult, RuleAnswer, Store, SyncStore } from '../store/store.js';
import { StoreCalls, type StoreAnswer } from './store-calls.js';
import { modeOption, nameOption, rejectUnknownOptions, requireObject } from '../shared/validate.js';
import { waitForSlot, type WaitOptions } from './wait.js';
import { EVENT_OPERATIONS, notify, performanceNow } from './observe.js';
import type {
  DecisionEvent,
  Limiter,
  LimiterChanges,
  LimiterMode,
  LimiterOptions,
  LimitOptions,
  ReserveOptions,
  SyncLimiter,
  TakeOptions,
} from './types.js';
import {
  checkCallbacks,
  LIMITER_OPTIONS,
  checkOperation,
  checkQuotas,
  checkRules,
  checkStoreOperations,
  checkSynchronous,
  nextDeny,
  type LiveDenyList,
  readCost,
  readMaxWait,
} from './input.js';

/**
 * Builds a limiter. Everything is validated here, once; the hot path only checks identity and cost.
 * @example
 * const limiter = createLimiter({ store: memoryStore(), rules: tokenBucket({ capacity: 20, refillRate: 10 }) });
 * const decision = await limiter.limit('user:42');
 */
export function createLimiter<S extends Store>(options: LimiterOptions<S>): S extends SyncStore ? SyncLimiter : Limiter {
  return new RateLimiter(options) as unknown as S extends SyncStore ? SyncLimiter : Limiter;
}

class RateLimiter implements SyncLimiter {
  readonly name: string;
  readonly store: Store;
  private readonly keyPrefix: string;
  private readonly clock: () => number;
  private readonly quotaFor: LimiterOptions['quotaFor'];
  private readonly policy: FailurePolicy;
  private readonly quotaCache = new WeakMap<object, readonly Rule[]>();
  private readonly keys: KeyCache;
  /** How the store is called: `limit`, or its seam (a FastPathStore's or a MemoryFirstStore's) for single-rule step operations. */
  private readonly calls: StoreCalls;
  private currentRules!: readonly Rule[];
  private currentMode!: LimiterMode;
  private currentQuotas: ReadonlyMap<string, readonly Rule[]> = new Map();
  /** The deny list set whole (checked, frozen), or the live list that takes changes, which then speaks for it (limiter/input.ts). */
  denyList: readonly DenyEntry[] = checkDenyList([], 'deny');
  private denyLive: LiveDenyList | undefined = undefined;
  denyMode: Limiter['denyMode'] = 'enforce';
  private readonly onDecision: ((event: DecisionEvent) => void) | undefined;
  /**
   * The rule when every `limit`/`limitSync` call without options can go straight to the seam (`limitOneRule`): a
   * FastPathStore with a synchronous failure policy (`limit` only: a MemoryFirstStore), no quotaFor, one unstaggered
   * rule, enforce mode (shadow mode takes the pipeline, which lets its denials through). Set by configure().
   */
  private fastRule: Rule | undefined;

  constructor(raw: LimiterOptions) {
    const options = requireObject(raw, 'createLimiter') as unknown as LimiterOptions;
    rejectUnknownOptions(options, LIMITER_OPTIONS, 'createLimiter');
    this.store = checkStore(options.store, 'createLimiter: store');
    checkStoreOperations(this.store);
    this.name = nameOption(options.name ?? 'default', 'createLimiter: name');
    const prefix = nameOption(options.prefix ?? 'sluice', 'createLimiter: prefix');
    this.keyPrefix = `${prefix}:${this.name}:{`;
    this.keys = new KeyCache(this.keyPrefix, this.store.capabilities.synchronous === true || this.store.capabilities.memoryFirst === true);
    const { answersFailures } = this.store.capabilities;
    this.calls = new StoreCalls(this.store, this.keyPrefix, typeof options.onStoreError === 'object');
    checkCallbacks(options);
    this.clock = options.clock ?? Date.now;
    this.quotaFor = options.quotaFor;
    this.onDecision = options.onDecision;
    // A store that answers its own failures (a tier) gave every answer it could prove safe (see answersFailures).
    this.policy = createFailurePolicy({
      timeout: options.timeout,
      onStoreError: options.onStoreError ?? (answersFailures === true ? 'deny' : 'allow'),
      circuitBreaker: options.circuitBreaker ?? (answersFailures === true ? false : undefined),
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
    return readClock(this.clock, 'createLimiter');
  }

  get rules(): readonly Rule[] {
    return this.currentRules;
  }

  get deny(): readonly DenyEntry[] {
    return this.denyLive?.list ?? this.denyList;
  }

  get denyLineage(): DenyLineage | undefined {
    return this.denyLive;
  }

  get mode(): LimiterMode {
    return this.currentMode;
  }

  get circuit(): CircuitState {
    return this.policy.circuit;
  }

  get quotas(): ReadonlyMap<string, readonly Rule[]> {
    return this.currentQuotas;
  }

  configure(changes: LimiterChanges): void {
    const known = requireObject(changes, 'configure');
    rejectUnknownOptions(known, ['rules', 'mode', 'quotas', 'deny', 'denyMode'], 'configure');
    const rules = changes.rules === undefined ? this.currentRules : checkRules(changes.rules, 'rules');
    const mode = modeOption(changes.mode ?? this.currentMode, 'mode');
    const quotas = changes.quotas === undefined ? this.currentQuotas : checkQuotas(changes.quotas);
    const deny = nextDeny(changes, this);
    // A list set whole (an array) replaces a live one; a live one speaks for itself.
    if (changes.deny !== undefined) [this.denyList, this.denyLive] = [deny.list, deny.live];
    this.denyMode = deny.denyMode;
    this.currentRules = rules;
    this.currentMode = mode;
    this.currentQuotas = quotas;
    const only = rules.length === 1 ? rules[0]! : undefined;
    const plain = this.quotaFor === undefined && quotas.size === 0 && this.onDecision === undefined;
    const seam = (this.calls.fastPath !== undefined && this.policy.synchronous) || this.calls.memoryPath !== undefined;
    this.fastRule = seam && plain && only !== undefined && !only.stagger && mode === 'enforce' ? only : undefined;
  }

  limit(identity: string, options?: LimitOptions): Promise<Decision> {
    const rule = this.fastRule;
    if (rule === undefined || options !== undefined) return this.run(identity, options, 'consume');
    try {
      const decided = this.limitOneRule(identity, rule);
      return isPromise(decided) ? decided : Promise.resolve(decided);
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
    if (typeof fn !== 'function')
      throw new SluiceError('INVALID_OPTION', `schedule: fn must be a function () => value, got ${describe(fn)}`);
    await this.wait(identity, options);
    return fn();
  }

  limitSync(identity: string, options?: LimitOptions): Decision {
    const rule = this.fastRule;
    return rule === undefined || options !== undefined || this.calls.fastPath === undefined
      ? this.runSync(identity, options, 'consume', 'limitSync')
      : (this.limitOneRule(identity, rule) as Decision);
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
      const pending = this.store.reset(
        key,
        rules.map((r) => r.id),
      );
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
  private run(identity: string, options: LimitOptions | undefined, operation: Operation): Promise<Decision> {
    try {
      const decision = this.decision(identity, options, operation, false);
      return isPromise(decision) ? decision : Promise.resolve(decision);
    } catch (error) {
      return Promise.reject(error);
    }
  }

  /** The *Sync methods: refused up front, before anything is counted, when an answer could need a promise. */
  private runSync(identity: string, options: LimitOptions | undefined, operation: Operation, method: string): Decision {
    checkSynchronous(this.store, this.policy, method);
    return this.decision(identity, options, operation, true) as Decision;
  }

  /**
   * The one pipeline every decision takes: resolve the rules, build the request, run the store under the failure
   * policy, turn the answer into a decision. The only seam is how the store is run: a single-rule step-operation request on a
   * FastPathStore goes through `limitOne` into a reused answer (`pnpm bench memory` shows it pays), everything
   * else through `limit(request)`; both are run by the same policy and turned into a decision by the same step (`toDecision`).
   */
  private decision(identity: string, options: LimitOptions | undefined, operation: Operation, sync: boolean): Decision | Promise<Decision> {
    if (this.onDecision !== undefined) return this.observed(identity, options, operation, sync);
    return this.decideNow(identity, options, operation, sync);
  }

  /** `decideNow`, timed and reported to `onDecision` (whose exceptions are not the caller's). */
  private observed(identity: string, options: LimitOptions | undefined, operation: Operation, sync: boolean): Decision | Promise<Decision> {
    const started = performanceNow();
    const decided = this.decideNow(identity, options, operation, sync);
    if (!isPromise(decided)) return this.report(identity, operation, decided, started);
    return decided.then((decision) => this.report(identity, operation, decision, started));
  }

  private report(identity: string, operation: Operation, decision: Decision, started: number): Decision {
    notify(this.onDecision!, {
      limiter: this.name,
      operation: EVENT_OPERATIONS[operation],
      identity,
      decision,
      durationMs: performanceNow() - started,
    });
    return decision;
  }

  private decideNow(
    identity: string,
    options: LimitOptions | undefined,
    operation: Operation,
    sync: boolean,
  ): Decision | Promise<Decision> {
    if (!isStepOperation(operation)) checkOperation(this.store, options, operation);
    const rules = this.rulesFor(identity);
    const request = this.request(identity, options, operation, rules);
    if (this.currentMode === 'off') return withOperationFields(disabled(rules, request.now), request);
    const call = this.calls.callFor(request);
    if (sync)
      return this.toDecision(rules, request, this.policy.runSync(request, call as (request: LimitRequest) => LimitResult | RuleAnswer));
    const answer = this.policy.run(request, call);
    return isPromise(answer) ? this.decideWhenSettled(answer, rules, request) : this.toDecision(rules, request, answer);
  }

  /**
   * `decision()` for a `limit`/`limitSync` call of cost 1 when `fastRule` is set: the same steps (request, store
   * under the policy, toDecision), with what configure() already knows left out. The pipeline's one seam, kept because
   * `pnpm bench memory` and `pnpm bench fleet` show it pays. A promise only when a MemoryFirstStore's answer is one.
   */
  private limitOneRule(identity: string, rule: Rule): Decision | Promise<Decision> {
    if (typeof identity !== 'string' || identity.length === 0) identityKey(identity);
    const rules = this.currentRules;
    const request = new IdentityRequest(identity, this.keyPrefix, rules, 1, 'consume', this.now());
    const calls = this.calls;
    if (calls.fastPath !== undefined) {
      const answer = this.policy.runSync(request, calls.limitOne);
      return answer === calls.answer ? combineOneOutcome(rule, answer, request.now) : this.toDecision(rules, request, answer);
    }
    const answer = this.policy.run(request, calls.limitFromMemory);
    if (answer === calls.memoryAnswer) return combineOneOutcome(rule, answer, calls.memoryAnswer.now);
    return isPromise(answer) ? this.decideWhenSettled(answer, rules, request) : this.toDecision(rules, request, answer);
  }

  /** Turns an answer that comes later into a decision. A method of its own: a closure in decision() would make every call allocate a context. */
  private decideWhenSettled(
    answer: Promise<StoreAnswer | FailureAnswer>,
    rules: readonly Rule[],
    request: LimitRequest,
  ): Promise<Decision> {
    return answer.then((a) => this.toDecision(rules, request, a));
  }

  private rulesFor(identity: string): readonly Rule[] {
    if (this.currentQuotas.size > 0) {
      const own = this.currentQuotas.get(identity);
      if (own !== undefined) return own;
    }
    if (this.quotaFor === undefined) return this.currentRules;
    const custom = this.quotaFor(identity);
    if (custom === undefined) return this.currentRules;
    // quotaFor usually returns one of a few shared rule lists: validate each list once.
    let checked = this.quotaCache.get(custom);
    if (checked === undefined) {
      checked = checkRules(custom, 'quotaFor(identity)');
      this.quotaCache.set(custom, checked);
    }
    return checked;
  }

  private request(identity: string, options: LimitOptions | undefined, operation: Operation, rules: readonly Rule[]): LimitRequest {
    if (this.calls.seam && rules.length === 1 && !rules[0]!.stagger && isStepOperation(operation)) {
      // The fast path finds the identity without its key (the store builds it only for an identity it does not hold).
      if (typeof identity !== 'string' || identity.length === 0) identityKey(identity);
      const cost = options === undefined ? 1 : readCost(options, operation);
      return new IdentityRequest(identity, this.keyPrefix, rules, cost, cost === 0 ? 'peek' : operation, this.now());
    }
    const key = this.keys.keyFor(identity);
    const cost = options === undefined ? 1 : readCost(options, operation);
    const request: LimitRequest = {
      key,
      rules: hasStagger(rules) ? stagger(rules, identity) : rules,
      cost,
      operation: cost === 0 && isStepOperation(operation) ? 'peek' : operation,
      now: this.now(),
    };
    return operation === 'reserve' ? { ...request, maxWaitMs: readMaxWait(options as ReserveOptions) } : request;
  }

  /**
   * The last step: the store's answer (or the policy's) as a decision. Shadow mode lets a denial through (even a
   * fail-closed one: shadow mode never refuses); a policy answer is marked degraded; take and reserve answers
   * carry `granted` / `startAt` whoever decided.
   */
  private toDecision(rules: readonly Rule[], request: LimitRequest, answer: LimitResult | RuleAnswer | FailureAnswer): Decision {
    let decision: Decision;
    const { answer: one, memoryAnswer } = this.calls;
    if (answer === one) decision = this.applyMode(combineOneOutcome(rules[0]!, one, request.now));
    else if (answer === memoryAnswer) decision = this.applyMode(combineOneOutcome(rules[0]!, memoryAnswer, memoryAnswer.now));
    else if (answer instanceof FailureAnswer) {
      decision =
        answer.result !== undefined
          ? degrade(this.applyMode(combineOutcomes(rules, answer.result.outcomes, answer.result.now)), answer.error)
          : this.applyMode(failOpenOrClosed(answer.verdict!, rules, request.now, answer.error));
    } else {
      const result = answer as LimitResult;
      const decided = combineOutcomes(rules, result.outcomes, result.now);
      decision = this.applyMode(result.error === undefined ? decided : degrade(decided, result.error));
    }
    return withOperationFields(decision, request);
  }

  private applyMode(decision: Decision): Decision {
    if (this.currentMode === 'shadow' && !decision.allowed) return { ...decision, allowed: true, reason: 'shadow' };
    return decision;
  }
}
