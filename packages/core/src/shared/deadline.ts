/**
 * Deadlines on store calls. A deadline measures the store, not the application: a call is charged only with time
 * during which the event loop was able to read its reply, so an event-loop stall (a synchronous handler, a GC pause,
 * JIT at start, the process descheduled on a machine with more processes than cores) never times out a healthy
 * store nor opens the breaker. A store that really is slow still gets its deadline: on a healthy loop a call is
 * answered at `timeout` plus about one loop turn. A late outcome is consumed, a timer is always cleared or stops by
 * itself, and nothing rejects unhandled. Used by the failure policy (store/failure-policy.ts) and
 * the config watcher (config/watch-config.ts).
 *
 * How the loop is measured: while a call is in flight the deadline timer never sleeps longer than SLICE_MS, and each
 * firing tells how late it was. A firing charges the calls in flight with the time it slept, plus at most
 * STALL_TOLERANCE_MS of lateness (timer granularity); lateness beyond that was a stall and is not charged. So one
 * long stall costs a call at most SLICE_MS + STALL_TOLERANCE_MS, and many short ones (a starved CPU: each firing a
 * little late) cost only their tolerance, never their sum. Time comes from Date.now(): a wall clock stepped forward
 * reads as a stall, one stepped back charges nothing, neither ends a call early.
 *
 * Before a call past its deadline is refused, pending I/O gets a turn of the event loop (timers run before I/O, so a
 * reply that arrived during a stall is read first); right after a stall it gets GRACE_TURNS turns on a loop that is
 * on time again (a reply that needs several reads, like HTTP headers then body, or a worker's message), and never
 * more than MAX_GRACE_TURNS turns in all.
 */
import { SluiceError } from './errors.js';
import { isPromiseLike } from './promise.js';
import { timers, unref } from './timers.js';

/** The longest the deadline timer sleeps while a call is in flight (ms): how finely stalls are measured. */
export const SLICE_MS = 5;

/**
 * Lateness of one firing that is still charged to the calls in flight (ms): timers fire up to a millisecond or two
 * late on a healthy loop. A firing later than this found the loop stalled; the rest of its lateness is not charged.
 */
export const STALL_TOLERANCE_MS = 2;

/** Firings on time in a row that show the loop healthy again after a stall, before a due call is refused. */
export const GRACE_TURNS = 3;

/** The most loop turns a call past its deadline waits for its reply, however stalled the loop stays. */
export const MAX_GRACE_TURNS = 8;

/**
 * Races one store call against a deadline, with the same stall-aware measure as `Deadlines` (for calls that are not
 * on a hot path: a reset, a fallback store). Its timer is cleared as soon as the call settles, and the call's late
 * outcome (value or rejection) is consumed here, so nothing is left dangling whichever finishes first.
 */
export function withDeadline<T>(pending: Promise<T>, timeoutMs: number): Promise<T> {
  return new Deadlines(timeoutMs, true).race(pending);
}

/**
 * `withDeadline` for a call that may answer at once or throw (a config source's read): an answer at once is taken as
 * it is, with no timer; a thrown error rejects; a promise races the deadline.
 */
export function callWithDeadline<T>(call: () => T | PromiseLike<T>, timeoutMs: number): Promise<T> {
  let answer: T | PromiseLike<T>;
  try {
    answer = call();
  } catch (error) {
    return Promise.reject(error);
  }
  return isPromiseLike<T>(answer) ? withDeadline(Promise.resolve(answer), timeoutMs) : Promise.resolve(answer);
}

function timeoutError(timeoutMs: number): SluiceError {
  return new SluiceError('STORE_TIMEOUT', `the store did not answer within ${timeoutMs} ms`);
}

interface Waiter {
  /** The store clock (`Deadlines.charged`) at which its deadline passes. */
  readonly expiresAt: number;
  readonly reject: (error: unknown) => void;
  settled: boolean;
  /** Loop turns it has waited past its deadline; -1 while its deadline has not passed. */
  graceTurns: number;
  next: Waiter | undefined;
}

/**
 * `withDeadline` for the hot path: one timer per limiter instead of one per call. Every call of a limiter has the
 * same timeoutMs, so deadlines expire in call order: waiters form a FIFO list and a single timer serves the oldest
 * one. Settled waiters leave the front of the list as they settle, so under load it holds about the calls in flight.
 * The timer is not cleared when the last call settles (a set and a clear per call is what this class saves); it
 * fires once more, finds nothing in flight and stops, so an idle limiter holds no timer after at most SLICE_MS. The
 * timer is unref'd where the runtime allows, so it never keeps a process alive by itself.
 *
 * The store clock: `charged` counts the ms the calls in flight are charged with (see the file's header). A call's
 * deadline passes when `charged` has moved by timeoutMs since it started. The decision never waits past the deadline
 * plus the process's own stalls (less STALL_TOLERANCE_MS + SLICE_MS of each) and MAX_GRACE_TURNS loop turns.
 */
export class Deadlines {
  private first: Waiter | undefined;
  private last: Waiter | undefined;
  private inFlight = 0;
  private timer: unknown = undefined;
  /** Store-clock ms charged by the firings so far. */
  private charged = 0;
  /** When the armed timer was armed (Date.now() ms) and how long it was asked to sleep. */
  private armedAt = 0;
  private sleepMs = 0;
  /** Firings on time in a row; a late one sets it to 0. Starts healthy: a fresh limiter has seen no stall. */
  private onTime = GRACE_TURNS;

  /** @param clearWhenIdle clear the timer when the last call settles (for a one-off deadline) */
  constructor(
    private readonly timeoutMs: number,
    private readonly clearWhenIdle = false,
  ) {}

  race<T>(pending: Promise<T>): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      let start = this.charged;
      if (this.timer === undefined) this.arm(Math.min(SLICE_MS, this.timeoutMs));
      else start += this.sinceArmed(Date.now());
      const waiter: Waiter = { expiresAt: start + this.timeoutMs, reject, settled: false, graceTurns: -1, next: undefined };
      if (this.last === undefined) this.first = waiter;
      else this.last.next = waiter;
      this.last = waiter;
      this.inFlight++;
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
      if (this.clearWhenIdle && this.timer !== undefined) {
        timers.clearTimeout(this.timer);
        this.timer = undefined;
      }
      return true;
    }
    while (this.first !== undefined && this.first.settled) this.first = this.first.next;
    return true;
  }

  /** What the armed timer charges if it fires at `now`: the time it slept, late by at most the tolerance. */
  private sinceArmed(now: number): number {
    return Math.min(Math.max(0, now - this.armedAt), this.sleepMs + STALL_TOLERANCE_MS);
  }

  private readonly expire = (): void => {
    this.timer = undefined;
    const now = Date.now();
    this.charged += this.sinceArmed(now);
    if (now - this.armedAt > this.sleepMs + STALL_TOLERANCE_MS) this.onTime = 0;
    else this.onTime++;
    let waiter = this.first;
    let waiting = false;
    while (waiter !== undefined && (waiter.settled || waiter.expiresAt <= this.charged)) {
      if (!waiter.settled) {
        // A turn has passed since its deadline (its reply, had it been read, would have settled it), and the loop
        // has been on time long enough for a reply held up by a stall to come in: it is refused.
        if (waiter.graceTurns >= MAX_GRACE_TURNS || (waiter.graceTurns >= 0 && this.onTime >= GRACE_TURNS)) {
          waiter.settled = true;
          this.inFlight--;
          waiter.reject(timeoutError(this.timeoutMs));
        } else {
          waiter.graceTurns++;
          waiting = true;
        }
      }
      waiter = waiter.next;
    }
    let front = this.first;
    while (front !== undefined && front.settled) front = front.next;
    this.first = front;
    if (front === undefined) this.last = undefined;
    if (waiting) this.arm(0);
    else if (front !== undefined) this.arm(Math.max(1, Math.min(SLICE_MS, front.expiresAt - this.charged)));
  };

  private arm(ms: number): void {
    this.armedAt = Date.now();
    // setTimeout(0) sleeps at least a millisecond in Node; what was asked is what a firing on time charges.
    this.sleepMs = ms;
    this.timer = unref(timers.setTimeout(this.expire, ms));
  }
}
