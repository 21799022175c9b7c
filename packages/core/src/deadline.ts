/**
 * Deadlines on store calls. A decision never waits longer than its limiter's `timeout` for a store (plus
 * event-loop latency and the process's own stalls); a late outcome is consumed, a timer is always cleared or
 * stops by itself, and nothing rejects unhandled. Used by the failure policy (failure-policy.ts).
 */
import { SluiceError } from './errors.js';

/** Timers exist in every runtime sluice targets (Node, Bun, Deno, workers, edge), but core compiles without DOM or Node typings. */
const timers = globalThis as unknown as {
  setTimeout(callback: () => void, ms: number): unknown;
  clearTimeout(handle: unknown): void;
};

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
 * The deadline measures the store, not the application (a stalled event loop is not a slow store):
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
