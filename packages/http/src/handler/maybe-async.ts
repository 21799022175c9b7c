import { isPromiseLike } from '@sluice/core/internal';

/**
 * Runs a generator that yields values which may be promises, synchronously for as long as none is. A request on
 * a synchronous store with synchronous hooks never allocates a promise; the first real promise switches the rest
 * of the run to async. Each yield evaluates to the settled value (or throws its rejection) either way.
 */
export function runMaybeAsync<T>(steps: Generator<unknown, T, unknown>): T | Promise<T> {
  let step = steps.next();
  while (!step.done) {
    const value = step.value;
    if (isPromiseLike(value)) return continueAsync(steps, value);
    step = steps.next(value);
  }
  return step.value;
}

async function continueAsync<T>(steps: Generator<unknown, T, unknown>, pending: PromiseLike<unknown>): Promise<T> {
  let current: unknown = pending;
  while (true) {
    let step: IteratorResult<unknown, T>;
    if (isPromiseLike(current)) {
      let settled: unknown;
      let failure: { error: unknown } | undefined;
      try {
        settled = await current;
      } catch (error) {
        failure = { error };
      }
      // A rejection is thrown into the generator at its yield, where its own try/catch can see it.
      step = failure === undefined ? steps.next(settled) : steps.throw(failure.error);
    } else {
      step = steps.next(current);
    }
    if (step.done) return step.value;
    current = step.value;
  }
}
