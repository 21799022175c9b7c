/**
 * What happens to a decision when its store fails: one unit, built by `createFailurePolicy`, that a limiter (or a
 * tier around its remote store) puts around every store call. In order:
 * - the circuit breaker: while open, the store is not called and the failure is answered at once (`CIRCUIT_OPEN`);
 * - the deadline: a call that returns a promise races `timeout` (one shared timer, stall-aware: shared/deadline.ts);
 * - the classification: a throw, a rejection or a missed deadline is one failure of the store (`STORE_ERROR`
 *   with the original in `cause`, or `STORE_TIMEOUT`), counted by the breaker; a success closes it;
 * - the answer: `'allow'` or `'deny'` as a verdict, or a fallback store's result (held to the same deadline; if
 *   it fails too, the verdict is `'allow'`: a double failure must not become an outage).
 * The caller shapes the answer into a decision (`degraded: true`, `error` set): a policy answer is never
 * disguised as an ordinary one. Proven against a real redis-server that is killed, paused and restarted
 * (packages/stores/redis/test/faults.test.ts) and with store doubles (core's test/failure-policy.test.ts).
 */
import { CircuitBreaker, type CircuitBreakerOptions, type CircuitState } from './circuit-breaker.js';
import { Deadlines, withDeadline } from '../shared/deadline.js';
import { durationOption, type Duration, type DurationRange } from '../shared/duration.js';
import { describe } from '../shared/describe.js';
import { SluiceError, isSluiceError } from '../shared/errors.js';
import type { LimitRequest, LimitResult, Store } from './store.js';
import { isPromiseLike } from '../shared/promise.js';
import { clockOption, optionNames, positiveInteger, rejectUnknownOptions, requireObject, timerDuration } from '../shared/validate.js';

/** What to do when the store fails or misses its deadline: fail open, fail closed, or ask another store. */
export type StoreErrorPolicy = 'allow' | 'deny' | Store;

export interface FailurePolicyOptions {
  /** Deadline for one store call that returns a promise (and for an asynchronous fallback store): ms or a string like `'250ms'`. @default '250ms' */
  timeout?: Duration;
  /** @default 'allow' */
  onStoreError?: StoreErrorPolicy;
  /** `false` turns the breaker off. @default { failureThreshold: 5, cooldown: '2s' } */
  circuitBreaker?: CircuitBreakerOptions | false;
  /** Epoch ms, for the breaker's cooldown. @default Date.now */
  clock?: () => number;
  /** Names the caller in validation messages. @default 'createFailurePolicy' */
  caller?: string;
}

/** The policy's answer to a failed store call. */
export class FailureAnswer {
  constructor(
    /** Why the store's answer is missing: STORE_ERROR, STORE_TIMEOUT or CIRCUIT_OPEN. */
    readonly error: SluiceError,
    /** The fallback store's result, when `onStoreError` is a store and it answered. */
    readonly result: LimitResult | undefined,
    /** Set when no store answered: the request is let through (`'allow'`) or refused (`'deny'`). */
    readonly verdict: 'allow' | 'deny' | undefined,
  ) {}
}

export interface FailurePolicy {
  /** The deadline in effect, in ms. */
  readonly timeoutMs: number;
  /** State of the breaker (`'closed'` when it is turned off). */
  readonly circuit: CircuitState;
  /** False when a failure can only be answered with a promise (an asynchronous fallback store). */
  readonly synchronous: boolean;
  /**
   * Runs `call(request)` under the policy: its value when it succeeds, a `FailureAnswer` when it fails. A promise only
   * when the call (or an asynchronous fallback) returns one. Never throws or rejects for a store failure.
   */
  run<T>(request: LimitRequest, call: (request: LimitRequest) => T | Promise<T>): T | FailureAnswer | Promise<T | FailureAnswer>;
  /** `run` for a call that answers synchronously; throws UNSUPPORTED_OPERATION if a failure's answer would need a promise. */
  runSync<T>(request: LimitRequest, call: (request: LimitRequest) => T): T | FailureAnswer;
  /**
   * `run` for a store call that is not a rate decision (a concurrency lease): the same breaker and deadline; a
   * failure is a `FailureAnswer` with a verdict only (a fallback store is not asked: `'allow'` when it is one).
   */
  runOperation<T>(now: number, call: () => T | Promise<T>): T | FailureAnswer | Promise<T | FailureAnswer>;
}

const COOLDOWN_RANGE: DurationRange = { min: 1 };

const KNOWN = optionNames<FailurePolicyOptions>({ timeout: true, onStoreError: true, circuitBreaker: true, clock: true, caller: true });
const BREAKER_OPTIONS = optionNames<CircuitBreakerOptions>({ failureThreshold: true, cooldown: true });

/**
 * Builds a failure policy, validating its options once.
 * @example
 * const policy = createFailurePolicy({ timeout: '100ms', onStoreError: memoryStore() });
 * const answer = await policy.run(request, (r) => remote.limit(r)); // a LimitResult, or a FailureAnswer
 */
export function createFailurePolicy(options: FailurePolicyOptions = {}): FailurePolicy {
  const caller = options.caller ?? 'createFailurePolicy';
  rejectUnknownOptions(requireObject(options, caller), KNOWN, caller);
  return new Policy(options, caller);
}

class Policy implements FailurePolicy {
  readonly timeoutMs: number;
  readonly synchronous: boolean;
  private readonly deadlines: Deadlines;
  private readonly breaker: CircuitBreaker | undefined;
  private readonly verdict: 'allow' | 'deny' | undefined;
  private readonly fallback: Store | undefined;
  private readonly clock: () => number;

  constructor(options: FailurePolicyOptions, caller: string) {
    this.timeoutMs = timerDuration(options.timeout ?? 250, `${caller}: timeout`);
    this.deadlines = new Deadlines(this.timeoutMs);
    this.breaker = makeBreaker(options.circuitBreaker, caller);
    const policy = options.onStoreError ?? 'allow';
    if (policy === 'allow' || policy === 'deny') this.verdict = policy;
    else if (typeof policy === 'object' && policy !== null) this.fallback = checkStore(policy, `${caller}: onStoreError`);
    else throw new SluiceError('INVALID_OPTION', `${caller}: onStoreError must be 'allow', 'deny' or a store, got ${describe(policy)}`);
    this.synchronous = this.fallback === undefined || this.fallback.capabilities.synchronous === true;
    this.clock = clockOption(options.clock, `${caller}: clock`);
  }

  get circuit(): CircuitState {
    return this.breaker?.state ?? 'closed';
  }

  run<T>(request: LimitRequest, call: (request: LimitRequest) => T | Promise<T>): T | FailureAnswer | Promise<T | FailureAnswer> {
    const started = this.start(request.now, call, request);
    if (started instanceof Stopped) return this.answer(request, started.error);
    if (!isPromise(started)) return this.succeeded(started);
    return this.deadlines.race(started).then(
      (value) => this.succeeded(value),
      (error: unknown) => this.answer(request, this.failed(error)),
    );
  }

  runSync<T>(request: LimitRequest, call: (request: LimitRequest) => T): T | FailureAnswer {
    const started = this.start(request.now, call, request);
    return started instanceof Stopped ? synchronously(this.answer(request, started.error)) : this.succeeded(started);
  }

  runOperation<T>(now: number, call: () => T | Promise<T>): T | FailureAnswer | Promise<T | FailureAnswer> {
    const started = this.start(now, call, undefined);
    if (started instanceof Stopped) return new FailureAnswer(started.error, undefined, this.verdict ?? 'allow');
    if (!isPromise(started)) return this.succeeded(started);
    return this.deadlines.race(started).then(
      (value) => this.succeeded(value),
      (error: unknown) => new FailureAnswer(this.failed(error), undefined, this.verdict ?? 'allow'),
    );
  }

  /**
   * The start every run shares: the breaker may stop the call (CIRCUIT_OPEN); a call that throws is a failure of
   * the store. Either comes back as `Stopped`; anything else is the call's value or promise.
   */
  private start<A, T>(now: number, call: (arg: A) => T, arg: A): T | Stopped {
    if (this.breaker !== undefined && !this.breaker.allowRequest(now)) return new Stopped(circuitOpen());
    try {
      return call(arg);
    } catch (error) {
      return new Stopped(this.failed(error));
    }
  }

  private succeeded<T>(value: T): T {
    this.breaker?.onSuccess();
    return value;
  }

  /** A failure of the store (a throw, a rejection, a missed deadline): counted by the breaker, as a store error. */
  private failed(error: unknown): SluiceError {
    this.breaker?.onFailure(this.clock());
    return asStoreError(error);
  }

  /** A fallback store limits for real; if it fails too, or misses the same deadline, the request is let through. */
  private answer(request: LimitRequest, error: SluiceError): FailureAnswer | Promise<FailureAnswer> {
    const fallback = this.fallback;
    if (fallback === undefined) return new FailureAnswer(error, undefined, this.verdict);
    try {
      const result = fallback.limit(request);
      if (!isPromise(result)) return new FailureAnswer(error, result, undefined);
      return withDeadline(result, this.timeoutMs).then(
        (r) => new FailureAnswer(error, r, undefined),
        () => new FailureAnswer(error, undefined, 'allow'),
      );
    } catch {
      return new FailureAnswer(error, undefined, 'allow');
    }
  }
}

/** Why a run did not get an answer from the store's call. */
class Stopped {
  constructor(readonly error: SluiceError) {}
}

function circuitOpen(): SluiceError {
  return new SluiceError('CIRCUIT_OPEN', 'the store circuit is open after repeated failures');
}

/** A policy answer a synchronous caller can use: one that needs a promise (an asynchronous fallback store) is refused. */
function synchronously(answer: FailureAnswer | Promise<FailureAnswer>): FailureAnswer {
  if (!isPromise(answer)) return answer;
  answer.then(undefined, () => undefined); // settled by the policy; nothing may reject unhandled
  throw new SluiceError('UNSUPPORTED_OPERATION', 'a synchronous decision cannot wait for a fallback store that answers with a promise');
}

function makeBreaker(value: CircuitBreakerOptions | false | undefined, caller: string): CircuitBreaker | undefined {
  if (value === false) return undefined;
  const options = value === undefined ? {} : requireObject(value, `${caller}: circuitBreaker`);
  rejectUnknownOptions(options, BREAKER_OPTIONS, `${caller}: circuitBreaker`);
  const threshold = positiveInteger(options.failureThreshold ?? 5, `${caller}: circuitBreaker.failureThreshold`);
  return new CircuitBreaker(threshold, durationOption(options.cooldown ?? 2000, `${caller}: circuitBreaker.cooldown`, COOLDOWN_RANGE));
}

/** A store as the limiter and the policy accept it: an object with `limit` and `capabilities`. */
export function checkStore(value: unknown, field: string): Store {
  const store = value as Store | undefined;
  if (typeof store !== 'object' || store === null || typeof store.limit !== 'function' || typeof store.capabilities !== 'object') {
    throw new SluiceError('INVALID_OPTION', `${field} must be a store such as memoryStore() or redisStore(client), got ${describe(value)}`);
  }
  return store;
}

/** isPromiseLike, typed for a value that is an answer or a promise of one. */
export const isPromise: <T>(value: T | Promise<T>) => value is Promise<T> = isPromiseLike as <T>(
  value: T | Promise<T>,
) => value is Promise<T>;

/** Every failure becomes a SluiceError with a code that says why; the original stays in `cause`. */
export function asStoreError(error: unknown): SluiceError {
  if (isSluiceError(error) && (error.code === 'STORE_TIMEOUT' || error.code === 'STORE_ERROR' || error.code === 'CIRCUIT_OPEN')) {
    return error;
  }
  const message = error instanceof Error ? error.message : String(error);
  return new SluiceError('STORE_ERROR', `the store failed: ${message}`, { cause: error });
}
