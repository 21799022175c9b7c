/** The watcher's timers and promise helpers (config/watch-config.ts, config/watch-deny.ts). */
import { SluiceError } from '../shared/errors.js';
import { isPromiseLike } from '../shared/promise.js';

/** setInterval exists wherever sluice runs; core compiles without DOM or Node typings. */
export const timers = globalThis as unknown as {
  setInterval(callback: () => void, ms: number): unknown;
  clearInterval(handle: unknown): void;
  setTimeout(callback: () => void, ms: number): unknown;
  clearTimeout(handle: unknown): void;
  console?: { warn(...values: unknown[]): void };
};

/** One read, as a promise that settles within `ms` (a store may answer synchronously or throw). */
export function withTimeout<T>(read: () => T | PromiseLike<T>, ms: number): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    let answer: T | PromiseLike<T>;
    try {
      answer = read();
    } catch (error) {
      reject(error);
      return;
    }
    if (!isPromiseLike<T>(answer)) {
      resolve(answer as T);
      return;
    }
    const timer = timers.setTimeout(() => reject(new SluiceError('STORE_TIMEOUT', `no answer within ${ms} ms`)), ms);
    unref(timer);
    answer.then(
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

/** A timer that does not keep the process alive by itself, where the runtime can say so (Node, Bun). */
export function unref(timer: unknown): void {
  const handle = timer as { unref?: () => void } | null;
  if (typeof handle === 'object' && handle !== null && typeof handle.unref === 'function') handle.unref();
}
