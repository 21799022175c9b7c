/**
 * The concurrency limiter (the "Concurrent requests limiter" of the article 'Scaling your API with rate limiters'):
 * "at most N requests in flight per identity". `acquire` takes a lease, a slot held until `release()` (or until its
 * ttl, so that a crashed holder frees it by itself); a refusal says when the oldest lease expires. The store runs
 * `evaluateLease()` (store/leases.ts) atomically.
 */
import { readClock } from '../shared/clock.js';
import type { Duration } from '../shared/duration.js';
import { describe } from '../shared/describe.js';
import { SluiceError } from '../shared/errors.js';
import { FailureAnswer, checkStore, createFailurePolicy, type FailurePolicy } from '../store/failure-policy.js';
import type { CircuitBreakerOptions } from '../store/circuit-breaker.js';
import { identityKey } from '../shared/identity.js';
import type { LeaseOp, LeaseRequest, LeaseResult } from '../store/leases.js';
import { notify, performanceNow } from '../limiter/observe.js';
import type { AbortSignalLike, LimiterMode } from '../shared/types.js';
import type { Store } from '../store/store.js';
import {
  clockOption,
  modeOption,
  nameOption,
  optionalFunction,
  optionNames,
  positiveInteger,
  rejectUnknownOptions,
  requireObject,
  timerDuration,
} from '../shared/validate.js';

export type { AbortSignalLike } from '../shared/types.js';

export interface ConcurrencyLimiterOptions {
  /** A store that announces the `lease` operation (the memory store does). */
  store: Store;
  /** Most leases held at once per identity, a positive integer. */
  limit: number;
  /** A lease's lifetime: a holder that crashed frees its slot after this. Long work calls `lease.extend()`. @default '60s' */
  ttl?: Duration;
  /** Namespaces this limiter's keys. @default 'default' */
  name?: string;
  /** @default 'sluice' */
  prefix?: string;
  /** Epoch ms. @default Date.now */
  clock?: () => number;
  /** `shadow` counts and reports but never refuses; `off` admits without asking the store. @default 'enforce' */
  mode?: LimiterMode;
  /** Deadline for one store call. @default '250ms' */
  timeout?: Duration;
  /** A store failure lets the request through (`'allow'`, no lease held) or refuses it (`'deny'`). @default 'allow' */
  onStoreError?: 'allow' | 'deny';
  /** @default { failureThreshold: 5, cooldown: '2s' } */
  circuitBreaker?: CircuitBreakerOptions | false;
  /**
   * Called after every `acquire` with what was decided and how long it took (metrics, logs; see `@sluice/otel`),
   * as `createLimiter`'s `onDecision`. It runs inline: keep it cheap. An exception it throws is swallowed.
   * Unset, it costs nothing. Releases and extensions are not decisions and are not reported.
   */
  onDecision?: (event: LeaseEvent) => void;
}

/** What a concurrency limiter's `onDecision` receives. */
export interface LeaseEvent {
  /** Which kind of component decided: one observer can take the events of limiters, concurrency limiters and shedders. */
  readonly component: 'concurrency';
  /** The concurrency limiter's name. */
  readonly limiter: string;
  readonly operation: 'acquire';
  readonly identity: string;
  readonly decision: LeaseDecision;
  /** From the call to its answer, in ms (fractional where the runtime's performance.now() is), store call included. */
  readonly durationMs: number;
}

export interface AcquireOptions {
  /** Releases the lease when this signal aborts (a client that went away). */
  signal?: AbortSignalLike;
}

/** A held slot. `release()` is idempotent; after the lease expired it frees nothing (the slot may be someone else's). */
export interface Lease {
  readonly id: string;
  /** When the slot frees by itself, epoch ms (-1 when nothing is held: shadow, off, or a store failure let it through). */
  readonly expiresAt: number;
  /** Frees the slot; true when this call freed it. Never rejects. */
  release(): Promise<boolean>;
  /** Moves the expiry to now + `ttl` (default the limiter's); false when the lease had already expired or was released. Never rejects. */
  extend(ttl?: Duration): Promise<boolean>;
}

export interface LeaseDecision {
  readonly allowed: boolean;
  /** `ok`; `concurrency_limited` (refused: 429); `shadow` (would have been refused); `disabled` (mode off); `store_unavailable`. */
  readonly reason: 'ok' | 'concurrency_limited' | 'shadow' | 'disabled' | 'store_unavailable';
  readonly limit: number;
  /** Leases held for the identity after this decision (as the store reported; 0 when it did not answer). */
  readonly held: number;
  readonly remaining: number;
  /** Milliseconds until the oldest lease expires (when a slot frees at the latest), 0 when allowed. */
  readonly retryAfter: number;
  readonly now: number;
  readonly degraded: boolean;
  readonly error?: unknown;
  /** Present when allowed; release it when the work is done. */
  readonly lease: Lease | undefined;
}

export interface ConcurrencyLimiter {
  readonly name: string;
  readonly limit: number;
  readonly mode: LimiterMode;
  acquire(identity: string, options?: AcquireOptions): Promise<LeaseDecision>;
  /** Changes the limit or the mode at run time; held leases are kept. */
  configure(changes: { limit?: number; mode?: LimiterMode }): void;
}

const KNOWN = optionNames<ConcurrencyLimiterOptions>({
  store: true,
  limit: true,
  ttl: true,
  name: true,
  prefix: true,
  clock: true,
  mode: true,
  timeout: true,
  onStoreError: true,
  circuitBreaker: true,
  onDecision: true,
});
const WHERE = 'createConcurrencyLimiter';

/**
 * @example
 * const inFlight = createConcurrencyLimiter({ store: memoryStore(), limit: 20 });
 * const d = await inFlight.acquire(user.id); if (!d.allowed) return respond(429);
 * try { await work(); } finally { await d.lease!.release(); }
 */
export function createConcurrencyLimiter(options: ConcurrencyLimiterOptions): ConcurrencyLimiter {
  return new Concurrency(options);
}

class Concurrency implements ConcurrencyLimiter {
  readonly name: string;
  private readonly store: Store & { lease: NonNullable<Store['lease']> };
  private readonly keyPrefix: string;
  private readonly ttlMs: number;
  private readonly clock: () => number;
  private readonly policy: FailurePolicy;
  private readonly onDecision: ((event: LeaseEvent) => void) | undefined;
  private currentLimit!: number;
  private currentMode!: LimiterMode;

  constructor(raw: ConcurrencyLimiterOptions) {
    const options = requireObject(raw, WHERE) as unknown as ConcurrencyLimiterOptions;
    rejectUnknownOptions(options, KNOWN, WHERE);
    const store = checkStore(options.store, `${WHERE}: store`);
    if (!store.capabilities.operations.includes('lease') || typeof store.lease !== 'function') {
      throw new SluiceError(
        'INVALID_OPTION',
        `${WHERE}: store must support leases (its capabilities.operations lack 'lease'); sluice's memory, SQLite and Redis stores do, and on Upstash upstashLeaseStore() does`,
      );
    }
    this.store = store as Store & { lease: NonNullable<Store['lease']> };
    this.name = nameOption(options.name ?? 'default', `${WHERE}: name`);
    this.keyPrefix = `${nameOption(options.prefix ?? 'sluice', `${WHERE}: prefix`)}:${this.name}:{`;
    this.ttlMs = timerDuration(options.ttl ?? 60_000, `${WHERE}: ttl`);
    this.clock = clockOption(options.clock, `${WHERE}: clock`);
    const onStoreError = options.onStoreError ?? 'allow';
    if (onStoreError !== 'allow' && onStoreError !== 'deny') {
      throw new SluiceError('INVALID_OPTION', `${WHERE}: onStoreError must be 'allow' or 'deny', got ${describe(onStoreError)}`);
    }
    this.policy = createFailurePolicy({
      timeout: options.timeout,
      onStoreError,
      circuitBreaker: options.circuitBreaker,
      clock: this.clock,
      caller: WHERE,
    });
    this.onDecision = optionalFunction(options.onDecision, `${WHERE}: onDecision`, '(event) => void');
    this.configure({ limit: options.limit, mode: options.mode ?? 'enforce' });
  }

  get limit(): number {
    return this.currentLimit;
  }

  get mode(): LimiterMode {
    return this.currentMode;
  }

  configure(changes: { limit?: number; mode?: LimiterMode }): void {
    rejectUnknownOptions(requireObject(changes, 'configure'), ['limit', 'mode'], 'configure');
    const limit = positiveInteger(changes.limit ?? this.currentLimit, `${WHERE}: limit`);
    const mode = modeOption(changes.mode ?? this.currentMode, `${WHERE}: mode`);
    this.currentLimit = limit;
    this.currentMode = mode;
  }

  acquire(identity: string, options?: AcquireOptions): Promise<LeaseDecision> {
    // Unobserved, the decision is returned as it comes: no clock read, no extra promise.
    if (this.onDecision === undefined) return this.decide(identity, options);
    return this.observed(identity, options, this.onDecision);
  }

  /** `decide`, timed and reported. A call that throws (a bad signal, a bad clock) decided nothing and is not reported. */
  private async observed(
    identity: string,
    options: AcquireOptions | undefined,
    observer: (event: LeaseEvent) => void,
  ): Promise<LeaseDecision> {
    const started = performanceNow();
    const decision = await this.decide(identity, options);
    notify(observer, {
      component: 'concurrency',
      limiter: this.name,
      operation: 'acquire',
      identity,
      decision,
      durationMs: performanceNow() - started,
    });
    return decision;
  }

  private async decide(identity: string, options: AcquireOptions | undefined): Promise<LeaseDecision> {
    const key = this.keyPrefix + identityKey(identity) + '}';
    const signal = options?.signal;
    if (signal !== undefined && (typeof signal !== 'object' || signal === null || typeof signal.addEventListener !== 'function')) {
      throw new SluiceError('INVALID_OPTION', `acquire options: signal must be an AbortSignal, got ${describe(signal)}`);
    }
    const limit = this.currentLimit;
    const now = this.now();
    if (this.currentMode === 'off') return decision(true, 'disabled', limit, 0, 0, now, NONE);
    const id = leaseId();
    const answer = await this.call({ key, op: 'acquire', id, limit, ttlMs: this.ttlMs, now });
    if (answer instanceof FailureAnswer) {
      const allowed = answer.verdict !== 'deny';
      return {
        ...decision(allowed, 'store_unavailable', limit, 0, allowed ? 0 : 1000, now, allowed ? NONE : undefined),
        degraded: true,
        error: answer.error,
      };
    }
    if (answer.ok) {
      const lease = new HeldLease(this, key, id, answer.expiresAt, signal);
      return decision(true, 'ok', limit, answer.held, 0, answer.now, lease);
    }
    const retryAfter = Math.max(0, answer.expiresAt - answer.now);
    if (this.currentMode === 'shadow') return decision(true, 'shadow', limit, answer.held, retryAfter, answer.now, NONE);
    return decision(false, 'concurrency_limited', limit, answer.held, retryAfter, answer.now, undefined);
  }

  /** One lease operation under the failure policy. */
  call(request: LeaseRequest): Promise<LeaseResult | FailureAnswer> {
    return Promise.resolve(this.policy.runOperation(request.now, () => this.store.lease(request)));
  }

  /** release and extend for a held lease: false on any failure (the lease then expires by itself), never a rejection. */
  async operate(key: string, id: string, op: Exclude<LeaseOp, 'acquire'>, ttlMs: number): Promise<LeaseResult | undefined> {
    try {
      const answer = await this.call({ key, op, id, limit: this.currentLimit, ttlMs, now: this.now() });
      return answer instanceof FailureAnswer ? undefined : answer;
    } catch {
      return undefined;
    }
  }

  ttlOf(ttl: Duration | undefined): number {
    return ttl === undefined ? this.ttlMs : timerDuration(ttl, 'lease.extend: ttl');
  }

  private now(): number {
    return readClock(this.clock, WHERE);
  }
}

class HeldLease implements Lease {
  private released = false;
  private readonly onAbort: (() => void) | undefined;

  constructor(
    private readonly limiter: Concurrency,
    private readonly key: string,
    readonly id: string,
    private expiry: number,
    private readonly signal: AbortSignalLike | undefined,
  ) {
    if (signal !== undefined) {
      this.onAbort = () => void this.release();
      if (signal.aborted) void this.release();
      else signal.addEventListener('abort', this.onAbort, { once: true });
    }
  }

  get expiresAt(): number {
    return this.expiry;
  }

  async release(): Promise<boolean> {
    if (this.released) return false;
    this.released = true;
    if (this.onAbort !== undefined) this.signal?.removeEventListener('abort', this.onAbort);
    const answer = await this.limiter.operate(this.key, this.id, 'release', 0);
    return answer?.ok === true;
  }

  async extend(ttl?: Duration): Promise<boolean> {
    if (this.released) return false;
    const answer = await this.limiter.operate(this.key, this.id, 'extend', this.limiter.ttlOf(ttl));
    if (answer?.ok !== true) return false;
    this.expiry = answer.expiresAt;
    return true;
  }
}

/** The lease of a decision that holds nothing (shadow, off, a store failure let through): releasing it does nothing. */
const NONE: Lease = Object.freeze({
  id: '',
  expiresAt: -1,
  release: () => Promise.resolve(false),
  extend: () => Promise.resolve(false),
});

function decision(
  allowed: boolean,
  reason: LeaseDecision['reason'],
  limit: number,
  held: number,
  retryAfter: number,
  now: number,
  lease: Lease | undefined,
): LeaseDecision {
  return { allowed, reason, limit, held, remaining: Math.max(0, limit - held), retryAfter, now, degraded: false, lease };
}

const ID_ALPHABET = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_';
/** Random bytes for lease ids, drawn 4096 at a time: one getRandomValues call per 256 ids, not one per id. */
let idBytes = new Uint8Array(0);
let idAt = 0;

/** 16 random characters of [A-Za-z0-9_-] (96 bits): two holders never share an id within a ttl. */
function leaseId(): string {
  if (idAt + 16 > idBytes.length) {
    idBytes = new Uint8Array(4096);
    idAt = 0;
    const random = (globalThis as { crypto?: { getRandomValues?: (array: Uint8Array) => Uint8Array } }).crypto;
    if (typeof random?.getRandomValues === 'function') random.getRandomValues(idBytes);
    else for (let i = 0; i < idBytes.length; i++) idBytes[i] = Math.floor(Math.random() * 256);
  }
  let id = '';
  for (let end = idAt + 16; idAt < end; idAt++) id += ID_ALPHABET[idBytes[idAt]! & 63];
  return id;
}
