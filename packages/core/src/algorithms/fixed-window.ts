/**
 * Fixed window counter. Time is cut into windows of `windowMs`; each window admits `limit` cost units.
 * Guarantee: at most `limit` per window. Worst-case burst: 2 × limit across a boundary (the end of one window
 * and the start of the next). With `stagger`, each identity's boundaries are shifted by a stable hash of the
 * identity so a whole fleet of clients does not reset at the same instant.
 * State: [windowStart, count].
 */
import { NEVER, newStepScratch, setPair, type StepOperation, type State, type StepOutcome, type StepScratch } from './algorithm.js';
import type { Duration } from '../shared/duration.js';
import { describe } from '../shared/describe.js';
import { SluiceError } from '../shared/errors.js';
import { readRuleOptions, type RuleBaseOptions } from './rule-options.js';
import type { FixedWindowParams, Rule } from './rule-types.js';
import { positiveInteger } from '../shared/validate.js';

export type { FixedWindowParams } from './rule-types.js';

export function fixedWindowStep(
  state: State | undefined,
  now: number,
  cost: number,
  operation: StepOperation,
  params: FixedWindowParams,
): StepOutcome {
  const out = newStepScratch();
  fixedWindowInto(state, now, cost, operation, params, out);
  return out;
}

/** The fixed window's one implementation, writing into a caller's scratch (`stepRuleInto`); `fixedWindowStep` is it with a fresh scratch. */
export function fixedWindowInto(
  state: State | undefined,
  now: number,
  cost: number,
  operation: StepOperation,
  params: FixedWindowParams,
  out: StepScratch,
): void {
  const { limit, windowMs, offsetMs } = params;
  let start = Math.floor((now - offsetMs) / windowMs) * windowMs + offsetMs;
  let count = 0;
  if (state !== undefined) {
    const storedStart = state[0]!;
    // A clock that went backwards stays in the newer window rather than opening a fresh one.
    if (storedStart >= start) {
      start = storedStart;
      count = state[1]!;
    }
  }
  const end = start + windowMs;

  let allowed = true;
  if (operation === 'refund') {
    count = Math.max(0, count - cost);
  } else {
    allowed = cost === 0 || count + cost <= limit; // cost 0 only reads: always allowed
    if (allowed && operation === 'consume') count += cost;
  }
  // An empty window is already at full capacity: it resets now, like every other algorithm, and needs no state.
  const resetAt = count > 0 ? end : now;
  out.allowed = allowed;
  setPair(out.next, start, count);
  out.remaining = Math.max(0, limit - count);
  out.resetAt = resetAt;
  out.retryAt = allowed ? now : cost > limit ? NEVER : end;
  out.ttlMs = resetAt - now;
}

export interface FixedWindowOptions extends RuleBaseOptions {
  /** Cost units admitted per window. */
  limit: number;
  /** Window length, e.g. `'1m'`. */
  window: Duration;
  /** Shift each identity's window boundaries by a stable hash of the identity. @default false */
  stagger?: boolean;
}

/**
 * @example fixedWindow({ limit: 100, window: '1m' })
 */
export function fixedWindow(options: FixedWindowOptions): Rule {
  const read = readRuleOptions(options, 'fixedWindow', ['limit', 'window', 'stagger']);
  const limit = positiveInteger(options.limit, 'fixedWindow: limit');
  const windowMs = read.duration('window');
  const stagger = options.stagger ?? false;
  if (typeof stagger !== 'boolean') {
    throw new SluiceError('INVALID_OPTION', `fixedWindow: stagger must be true or false, got ${describe(stagger)}`);
  }
  return {
    id: read.id(`fw:${windowMs}`),
    algorithm: 'fixed-window',
    params: { limit, windowMs, offsetMs: 0 },
    limit,
    windowMs,
    stagger,
  };
}
