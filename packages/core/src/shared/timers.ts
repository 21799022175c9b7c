/**
 * The runtime's timers, typed once. Every runtime sluice targets (Node, Bun, Deno, workers, edge) has setTimeout and
 * setInterval, but core compiles without DOM or Node typings, so every module that sets a timer reads them through
 * this one view of globalThis (and the other packages through `@sluice/core/internal`). The functions are looked up
 * at each call, so fake timers installed after import are used.
 */
export const timers = globalThis as unknown as {
  setTimeout(callback: () => void, ms: number): unknown;
  clearTimeout(handle: unknown): void;
  setInterval(callback: () => void, ms: number): unknown;
  clearInterval(handle: unknown): void;
  /** Where the runtime has one: background work that cannot throw to a caller warns here. */
  console?: { warn(...values: unknown[]): void };
};

/** The longest delay setTimeout and setInterval take, 2^31 − 1 ms (about 24.8 days): a longer one fires at once. */
export const MAX_TIMER_MS = 2_147_483_647;

/** A timer that does not keep the process alive by itself, where the runtime can say so (Node, Bun); returns it. */
export function unref<T>(timer: T): T {
  const handle = timer as { unref?: () => void } | null | undefined;
  if (typeof handle === 'object' && handle !== null && typeof handle.unref === 'function') handle.unref();
  return timer;
}
