// The throttled fetch's sleep until a booked slot (edge-safe: the timers are read from globalThis), and the error an
// aborted wait rejects with.
import { SluiceError } from '@sluice/core';
import type { AbortSignalLike } from '@sluice/core/concurrency';

const timers = globalThis as unknown as {
  setTimeout(callback: () => void, ms: number): unknown;
  clearTimeout(handle: unknown): void;
};
/** setTimeout clamps longer delays to 1 ms in every runtime: long waits sleep in steps of this. */
const MAX_TIMER_MS = 2_147_483_647;

/** Sleeps `ms`, in steps a timer can take; rejects with ABORTED when `signal` aborts. */
export async function sleep(ms: number, signal: AbortSignalLike | undefined): Promise<void> {
  for (let left = ms; left > 0; left -= MAX_TIMER_MS) {
    await new Promise<void>((resolve, reject) => {
      const onAbort = () => {
        timers.clearTimeout(timer);
        reject(aborted());
      };
      const timer = timers.setTimeout(
        () => {
          signal?.removeEventListener('abort', onAbort);
          resolve();
        },
        Math.min(left, MAX_TIMER_MS),
      );
      signal?.addEventListener('abort', onAbort, { once: true });
    });
  }
}

export function aborted(): SluiceError {
  return new SluiceError('ABORTED', 'createThrottledFetch: aborted by its signal; the booking was given back where the rules allow it');
}
