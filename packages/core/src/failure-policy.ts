/**
 * What a limiter does when its store fails: the deadline on every async store call, the classification of
 * failures, and the decision the policy answers with. The invariants, proven against a real redis-server that
 * is killed, paused and restarted (test/redis/faults.test.ts):
 * - a decision never waits longer than `timeoutMs` for a store (plus event-loop latency);
 * - a failed or late store call never becomes an unhandled rejection, and its timer is always cleared;
 * - a policy answer is never disguised as an ordinary one: `degraded: true`, `error.code` says why
 *   (`STORE_TIMEOUT`, `STORE_ERROR`, `CIRCUIT_OPEN`).
 */
import { CircuitBreaker, type CircuitBreakerOptions } from './circuit-breaker.js';
import type { Decision } from './decision.js';
import { parseDuration } from './duration.js';
import { SluiceError, describe, isSluiceError } from './errors.js';
import type { Rule } from './rules.js';
import type { Store } from './store.js';
import { rejectUnknownOptions, requireObject } from './validate.js';

/** What to do when the store fails or misses its deadline: fail open, fail closed, or ask another store. */
export type StoreErrorPolicy = 'allow' | 'deny' | Store;

/** setTimeout clamps larger delays to 1 ms in every runtime, which would time out every call at once. */
const MAX_TIMEOUT_MS = 2_147_483_647;

/** How long a caller told "denied by policy" should wait: the order of a reconnect, not of a rate window. */
export const POLICY_RETRY_AFTER_MS = 1000;

/** Timers exist in every runtime sluice targets (Node, Bun, Deno, workers, edge), but core compiles without DOM or Node typings. */
const timers = globalThis as unknown as {
  setTimeout(callback: () => void, ms: number): unknown;
  clearTimeout(handle: unknown): void;
};

export function checkTimeout(value: unknown): number {
  const ms = parseDuration(value, 'createLimiter: timeoutMs');
  if (ms > MAX_TIMEOUT_MS) {
    throw new SluiceError('INVALID_OPTION', `createLimiter: timeoutMs must be at most ${MAX_TIMEOUT_MS} ms (about 24.8 days), got ${describe(value)}`);
  }
  return ms;
}

export function checkPolicy(value: unknown, isStore: (value: unknown) => Store): StoreErrorPolicy {
  if (value === 'allow' || value === 'deny') return value;
  if (typeof value === 'object' && value !== null) return isStore(value);
  throw new SluiceError('INVALID_OPTION', `createLimiter: onStoreError must be 'allow', 'deny' or a store, got ${describe(value)}`);
}

export function makeBreaker(value: CircuitBreakerOptions | false | undefined): CircuitBreaker | undefined {
  if (value === false) return undefined;
  const options = value === undefined ? {} : requireObject(value, 'createLimiter: circuitBreaker');
  rejectUnknownOptions(options, ['failureThreshold', 'cooldownMs'], 'createLimiter: circuitBreaker');
  const threshold = options.failureThreshold ?? 5;
  if (typeof threshold !== 'number' || !Number.isSafeInteger(threshold) || threshold < 1) {
    throw new SluiceError('INVALID_OPTION', `createLimiter: circuitBreaker.failureThreshold must be a positive integer, got ${describe(threshold)}`);
  }
  return new CircuitBreaker(threshold, parseDuration(options.cooldownMs ?? 2000, 'createLimiter: circuitBreaker.cooldownMs'));
}

/**
 * Races a store call against the deadline. The timer is cleared as soon as the call settles, and the call's
 * late outcome (value or rejection) is consumed here, so nothing is left dangling whichever finishes first.
 */
export function withDeadline<T>(pending: Promise<T>, timeoutMs: number): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    const timer = timers.setTimeout(() => {
      reject(timeoutError(timeoutMs));
    }, timeoutMs);
    pending.then(
      (value) => {
        timers.clearTimeout(timer);
        resolve(value);
      },
      (error: unknown) => {
        timers.clearTimeout(timer);
        reject(error);
      },
    );
  });
}

function timeoutError(timeoutMs: number): SluiceError {
  return new SluiceError('STORE_TIMEOUT', `the store did not answer within ${timeoutMs} ms`);
}

interface Waiter {
  expiresAt: number;
  readonly reject: (error: unknown) => void;
  settled: boolean;
  /** Its deadline has passed once; it is refused only if it is still pending one turn of the event loop later. */
  due: boolean;
  next: Waiter | undefined;
}

/**
 * A timer that fires this much later than it was due found the process stalled (a synchronous handler, a long
 * GC): the stall is the application's, not the store's, and is not charged to the calls in flight.
 */
export const STALL_TOLERANCE_MS = 20;

/**
 * `withDeadline` for the hot path: one timer per limiter instead of one per call. Every call of a limiter has the
 * same timeoutMs, so deadlines expire in call order: waiters form a FIFO list and a single timer is armed for the
 * oldest one. Settled waiters leave the front of the list as they settle, so under load it holds about the calls
 * in flight. The timer is not cleared when the last call settles (a set and a clear per call is what this class
 * saves); it fires once more, finds nothing in flight and stops, so an idle limiter holds no timer after at most
 * timeoutMs. The timer is unref'd where the runtime allows, so it never keeps a process alive by itself.
 *
 * The deadline measures the store, not the application (issue 8, item 8):
 * - a timer that fires late (by more than STALL_TOLERANCE_MS) means the event loop was stalled; every deadline
 *   in flight moves by the stall, so a stall never times out a healthy store nor opens the breaker;
 * - a call past its deadline is refused one turn of the event loop later, not at once: timers run before I/O, so
 *   a reply that arrived while the process was busy is read, and used, before the call is given up.
 * Same guarantees as `withDeadline` otherwise: the decision never waits past the deadline plus the process's own
 * stalls and one loop turn; a late outcome is consumed; nothing rejects unhandled.
 */
export class Deadlines {
  private first: Waiter | undefined;
  private last: Waiter | undefined;
  private inFlight = 0;
  private timer: unknown = undefined;
  /** When the armed timer should fire (Date.now() ms). */
  private dueAt = 0;

  constructor(private readonly timeoutMs: number) {}

  race<T>(pending: Promise<T>): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      const waiter: Waiter = { expiresAt: Date.now() + this.timeoutMs, reject, settled: false, due: false, next: undefined };
      if (this.last === undefined) this.first = waiter;
      else this.last.next = waiter;
      this.last = waiter;
      this.inFlight++;
      if (this.timer === undefined) this.arm(this.timeoutMs);
      pending.then(
        (value) => {
          if (this.settle(waiter)) resolve(value);
        },
        (error: unknown) => {
          if (this.settle(waiter)) reject(error);
        },
      );
    });
  }

  /** Marks a waiter settled; false when its deadline already answered. */
  private settle(waiter: Waiter): boolean {
    if (waiter.settled) return false;
    waiter.settled = true;
    if (--this.inFlight === 0) {
      this.first = this.last = undefined;
      return true;
    }
    while (this.first !== undefined && this.first.settled) this.first = this.first.next;
    return true;
  }

  private readonly expire = (): void => {
    this.timer = undefined;
    const now = Date.now();
    const stalled = now - this.dueAt;
    if (stalled > STALL_TOLERANCE_MS) {
      // The process was stalled: the time it spent is not the store's. Waiters already due keep their turn.
      for (let w = this.first; w !== undefined; w = w.next) if (!w.settled && !w.due) w.expiresAt += stalled;
    }
    let waiter = this.first;
    let again = false;
    while (waiter !== undefined && (waiter.settled || waiter.expiresAt <= now)) {
      if (!waiter.settled) {
        if (waiter.due) {
          waiter.settled = true;
          this.inFlight--;
          waiter.reject(timeoutError(this.timeoutMs));
        } else {
          waiter.due = true; // refused next turn unless its reply is read first
          again = true;
        }
      }
      waiter = waiter.next;
    }
    // Skip the settled front; due waiters stay listed until the next turn refuses or their reply settles them.
    let front = this.first;
    while (front !== undefined && front.settled) front = front.next;
    this.first = front;
    if (front === undefined) this.last = undefined;
    if (again) this.arm(0);
    else if (front !== undefined) this.arm(Math.max(1, front.expiresAt - now));
  };

  private arm(ms: number): void {
    this.dueAt = Date.now() + ms;
    const timer = timers.setTimeout(this.expire, ms) as { unref?: () => void } | undefined;
    if (typeof timer === 'object' && timer !== null && typeof timer.unref === 'function') timer.unref();
    this.timer = timer;
  }
}

/** Every failure becomes a SluiceError with a code that says why; the original stays in `cause`. */
export function asStoreError(error: unknown): SluiceError {
  if (isSluiceError(error) && (error.code === 'STORE_TIMEOUT' || error.code === 'STORE_ERROR' || error.code === 'CIRCUIT_OPEN')) {
    return error;
  }
  const message = error instanceof Error ? error.message : String(error);
  return new SluiceError('STORE_ERROR', `the store failed: ${message}`, { cause: error });
}

export function degrade(decision: Decision, error: SluiceError): Decision {
  return { ...decision, degraded: true, error };
}

/**
 * The answer of the allow/deny policies: every rule reported at full room (allow) or none (deny), so headers
 * stay well formed, with `reason: 'store_unavailable'` and `degraded: true`.
 */
export function failOpenOrClosed(policy: 'allow' | 'deny', rules: readonly Rule[], now: number, error: SluiceError): Decision {
  const allowed = policy === 'allow';
  const reports = rules.map((rule) => ({
    id: rule.id,
    allowed,
    limit: rule.limit,
    remaining: allowed ? rule.limit : 0,
    resetAt: now,
    retryAt: allowed ? now : now + POLICY_RETRY_AFTER_MS,
    windowMs: rule.windowMs,
  }));
  const first = reports[0]!;
  return {
    allowed,
    reason: 'store_unavailable',
    limit: first.limit,
    remaining: first.remaining,
    resetAt: now,
    retryAfter: allowed ? 0 : POLICY_RETRY_AFTER_MS,
    degraded: true,
    rule: first.id,
    rules: reports,
    now,
    error,
  };
}
