// The throttled fetch's sleep until a booked slot (edge-safe: the timers are read from globalThis), and the error an
// aborted wait rejects with.
import { SluiceError } from '@sluice/core';
import type { AbortSignalLike } from '@sluice/core/concurrency';
import { MAX_TIMER_MS, timers } from '@sluice/core/internal';

/** Sleeps `ms`, in steps a timer can take (setTimeout fires at once past MAX_TIMER_MS); rejects with ABORTED when `signal` aborts. */
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
