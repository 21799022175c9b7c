/**
 * Waiting for a slot instead of being refused (the case of the article 'Rate limiting with Redis': workers calling a
 * third party that allows N per second across all of them). `wait` books the slot with one `reserve` (the shared
 * store decides the start time atomically, so concurrent waiters across processes are queued, not woken together to
 * race), then sleeps until that start: no polling, no thundering herd when a window opens.
 */
import { MAX_CLOCK_MS } from '../shared/clock.js';
import type { Decision } from './decision.js';
import { durationOption, type DurationRange } from '../shared/duration.js';
import { describe } from '../shared/describe.js';
import { SluiceError } from '../shared/errors.js';
import type { Limiter } from './types.js';
import { NEVER } from '../algorithms/algorithm.js';
import type { AbortSignalLike, WaitOptions } from '../shared/types.js';
import { MAX_TIMER_MS, timers } from '../shared/timers.js';

export type { WaitOptions } from '../shared/types.js';

// For outbound calls, build the limiter with onStoreError: 'deny' (or a fallback store): with the default 'allow',
// a store failure resolves every wait at once, and the fleet calls the third party unlimited while the store is down.

const MAX_WAIT_RANGE: DurationRange = { min: 0, max: MAX_CLOCK_MS };

/** Algorithms whose refund gives a booked slot back to the next caller (a window's refund would land in the wrong window). */
const REFUNDABLE = new Set(['token-bucket', 'leaky-bucket', 'gcra']);

/** The limiter's `wait`: books with reserve, sleeps until the slot's start, resolves with the booking's decision. */
export async function waitForSlot(limiter: Limiter, identity: string, options: WaitOptions): Promise<Decision> {
  if (typeof options !== 'object' || options === null) {
    throw new SluiceError('INVALID_OPTION', `wait options must be an object such as { maxWait: '30s' }, got ${describe(options)}`);
  }
  const { cost, maxWait, signal } = options;
  const maxWaitMs = durationOption(maxWait, 'wait options: maxWait', MAX_WAIT_RANGE);
  if (signal !== undefined && (typeof signal !== 'object' || signal === null || typeof signal.addEventListener !== 'function')) {
    throw new SluiceError('INVALID_OPTION', `wait options: signal must be an AbortSignal, got ${describe(signal)}`);
  }
  if (signal?.aborted === true) throw aborted();
  const decision = await limiter.reserve(identity, cost === undefined ? { maxWait: maxWaitMs } : { cost, maxWait: maxWaitMs });
  if (!decision.allowed) {
    // A store failure refused by the failure policy ('deny'): the store's own error, not a slot too far away.
    if (decision.degraded)
      throw decision.error instanceof SluiceError
        ? decision.error
        : new SluiceError('STORE_ERROR', 'wait: the store failed', { cause: decision.error });
    if (decision.reason === 'cost_exceeds_limit') {
      throw new SluiceError(
        'WAIT_TOO_LONG',
        `wait: a cost of ${cost ?? 1} can never fit rule "${decision.rule}" (its capacity is ${decision.limit})`,
      );
    }
    const start = decision.startAt ?? NEVER;
    const wait = start === NEVER ? 'never' : `in ${start - decision.now} ms`;
    throw new SluiceError(
      'WAIT_TOO_LONG',
      `wait: the next slot for "${identity}" starts ${wait}, beyond maxWait (${maxWaitMs} ms); nothing was booked`,
    );
  }
  // A degraded answer (the store failed, the policy let it through) starts now: there is no booking to wait for.
  // The wait is counted from the decision, in the store's own time (a store clock and the limiter's may differ).
  let remaining = decision.degraded ? 0 : (decision.startAt ?? decision.now) - decision.now;
  if (remaining <= 0) return decision;
  const refundable = limiter.rules.every((rule) => REFUNDABLE.has(rule.algorithm));
  try {
    while (remaining > 0) {
      // setTimeout fires at once past MAX_TIMER_MS: long waits sleep in steps of it.
      const step = Math.min(remaining, MAX_TIMER_MS);
      await sleep(step, signal);
      remaining -= step;
    }
  } catch (error) {
    if (refundable) await limiter.refund(identity, cost === undefined ? undefined : { cost }).catch(() => undefined);
    throw error;
  }
  return decision;
}

function sleep(ms: number, signal: AbortSignalLike | undefined): Promise<void> {
  return new Promise((resolve, reject) => {
    const onAbort = () => {
      timers.clearTimeout(timer);
      reject(aborted());
    };
    const timer = timers.setTimeout(() => {
      signal?.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    signal?.addEventListener('abort', onAbort, { once: true });
  });
}

function aborted(): SluiceError {
  return new SluiceError('ABORTED', 'wait: aborted by its signal; the booking was given back where the rules allow it');
}
