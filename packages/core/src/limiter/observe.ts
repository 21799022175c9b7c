/**
 * What the concurrency limiter and the two load shedders share to report a decision to an `onDecision` observer:
 * a clock for its duration and a call that keeps the observer's failure away from the caller; the limiter
 * (limiter/limiter.ts) uses them too. Nothing here runs when no observer is set: the components test for one first,
 * so an unobserved decision takes the path it took before observers existed.
 */
import type { Operation } from '../algorithms/algorithm.js';
import type { DecisionEvent } from './types.js';

/** The operation an `onDecision` event names: `limit` for a consuming call, as the limiter method is called. */
export const EVENT_OPERATIONS: Readonly<Record<Operation, DecisionEvent['operation']>> = {
  consume: 'limit',
  peek: 'peek',
  refund: 'refund',
  take: 'take',
  reserve: 'reserve',
};

/** Milliseconds, fractional where the runtime has `performance.now()` (Node, Bun, Deno, edge runtimes); else Date.now. */
export const performanceNow: () => number = (() => {
  const perf = (globalThis as { performance?: { now(): number } }).performance;
  return perf !== undefined && typeof perf.now === 'function' ? () => perf.now() : () => Date.now();
})();

/** Calls `observer(event)`; an exception it throws is swallowed, so that observing can never turn a decision into an error. */
export function notify<E>(observer: (event: E) => void, event: E): void {
  try {
    observer(event);
  } catch {
    // An observer's failure must not turn a decision into an error (as createLimiter's onDecision).
  }
}
