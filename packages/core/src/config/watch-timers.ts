/** The watcher's promise helpers (config/watch-config.ts); its timers are shared/timers.ts, its deadline shared/deadline.ts. */
import { timers, unref } from '../shared/timers.js';

export function delay(ms: number): Promise<void> {
  return new Promise((resolve) => unref(timers.setTimeout(resolve, ms)));
}

/** Runs `fn`, sending any failure, thrown or rejected, to `onError`: nothing escapes unhandled. */
export async function settle(fn: () => unknown, onError: (error: unknown) => void): Promise<void> {
  try {
    await fn();
  } catch (error) {
    onError(error);
  }
}
