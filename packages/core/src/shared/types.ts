// Types that modules on both sides of the limiter, the concurrency limiter, the wait and the config sources take
// from each other: defined here, apart from any of them, so that taking a type does not tie the modules into a loop.
// Each is exported publicly by the module it belongs to (limiter/types.ts, concurrency/concurrency-limiter.ts, limiter/wait.ts, config/source.ts).
import type { Duration } from './duration.js';

/** `enforce` denies; `shadow` counts and reports but never denies (dark launch); `off` is the kill switch. */
export type LimiterMode = 'enforce' | 'shadow' | 'off';

/** The part of an `AbortSignal` the limiter uses (core compiles without DOM typings; every runtime's AbortSignal fits). */
export interface AbortSignalLike {
  readonly aborted: boolean;
  addEventListener(type: 'abort', listener: () => void, options?: { once?: boolean }): void;
  removeEventListener(type: 'abort', listener: () => void): void;
}

export interface WaitOptions {
  /** Units to book, a non-negative integer. @default 1 */
  cost?: number;
  /** Longest wait accepted (ms or a string like '30s'); a later slot is refused with WAIT_TOO_LONG, nothing booked. */
  maxWait: Duration;
  /** Aborting gives the booking back where the rules allow it (buckets and GCRA) and rejects with ABORTED. */
  signal?: AbortSignalLike;
}

export type Unsubscribe = () => void | PromiseLike<void>;
