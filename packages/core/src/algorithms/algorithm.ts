/**
 * The shape shared by every algorithm: a pure step over a tiny state record.
 *
 * Time is an integer count of milliseconds since the Unix epoch. All arithmetic is on integers that stay
 * below 2^53 (factories reject parameters that could overflow), so the same step written in Lua on Redis
 * gives bit-identical answers. Divisions are floored or ceiled explicitly, never left to float rounding.
 */

/** What one algorithm step does: `consume` takes `cost` if it fits; `peek` answers whether it would fit and writes nothing; `refund` gives `cost` back. */
export type StepOperation = 'consume' | 'peek' | 'refund';

/**
 * What a store request does. The step operations, plus two defined once in `evaluate()` on top of them:
 * `take` grants as many units as fit now, up to `cost`; `reserve` books `cost` at the earliest time it fits,
 * within `maxWaitMs`. See `evaluate()` and core's README for their exact semantics.
 */
export type Operation = StepOperation | 'take' | 'reserve';

/** True for the operations an algorithm step runs directly (everything but `take` and `reserve`). */
export function isStepOperation(operation: Operation): operation is StepOperation {
  return operation === 'consume' || operation === 'peek' || operation === 'refund';
}

/** An algorithm's persisted state: a short flat list of integers (the sliding log's grows with its entries). */
export type State = readonly number[];

/** `retryAt` value meaning "never": the cost is larger than the rule's capacity. */
export const NEVER = -1;

export interface StepOutcome {
  /**
   * Whether the cost fits (consume, peek). Always true for refund and for cost 0 (a read), even when the state
   * holds more than the limit (a limit lowered at run time, a clock that stepped back).
   */
  readonly allowed: boolean;
  /** State to persist if the request commits. For a denial or a peek it equals the state read, refreshed. */
  readonly next: State;
  /** Whole units left after this request (after consuming, when it was allowed and consumed). */
  readonly remaining: number;
  /** When the rule is back to its full capacity, if nothing else arrives (epoch ms). */
  readonly resetAt: number;
  /** Earliest time the same cost would be allowed: `now` when allowed, `NEVER` when it can never fit. */
  readonly retryAt: number;
  /**
   * How long `next` stays meaningful. At or below 0 it is equivalent to no state, and every executor deletes the
   * record instead of writing it (so all executors read "no state" afterwards, even at an earlier clock).
   */
  readonly ttlMs: number;
}

export type Step<P> = (state: State | undefined, now: number, cost: number, operation: StepOperation, params: P) => StepOutcome;

/**
 * A `StepOutcome` filled in place, so that an in-process executor can run a step per decision without
 * allocating. `next` is the caller's array; the step overwrites its elements and sets its length.
 */
export interface StepScratch {
  allowed: boolean;
  next: number[];
  remaining: number;
  resetAt: number;
  retryAt: number;
  ttlMs: number;
}

/** The same step as `Step<P>`, writing its outcome into `out`: every field equal to what `Step<P>` returns. */
export type StepInto<P> = (
  state: State | undefined,
  now: number,
  cost: number,
  operation: StepOperation,
  params: P,
  out: StepScratch,
) => void;

/** Makes `next` the two-element state [a, b], in place. */
export function setPair(next: number[], a: number, b: number): void {
  if (next.length !== 2) next.length = 2;
  next[0] = a;
  next[1] = b;
}

/** Makes `next` the three-element state [a, b, c], in place. */
export function setTriple(next: number[], a: number, b: number, c: number): void {
  if (next.length !== 3) next.length = 3;
  next[0] = a;
  next[1] = b;
  next[2] = c;
}

/**
 * A non-negative amount kept in units of 1/`from` re-expressed in units of 1/`to`, rounded down (`up`: rounded
 * up). States scaled by a rule parameter record that parameter, so a rule changed at run time carries its state
 * over instead of misreading it. Exact while `remainder × to` stays below 2^53 (beyond, the same IEEE operations
 * as in the Lua executor, so every executor still agrees).
 */
export function rescale(value: number, from: number, to: number, up = false): number {
  if (from === to) return value;
  const whole = Math.floor(value / from);
  const product = (value - whole * from) * to;
  const part = up ? ceilDiv(product, from) : Math.floor(product / from);
  return whole * to + part;
}

export function newStepScratch(): StepScratch {
  return { allowed: true, next: [0, 0], remaining: 0, resetAt: 0, retryAt: 0, ttlMs: 0 };
}

/** ceil(a / b) for a >= 0, b > 0, exact for integers below 2^53 (no a + b - 1 overflow). */
export function ceilDiv(a: number, b: number): number {
  const q = Math.floor(a / b);
  return a - q * b > 0 ? q + 1 : q;
}

/**
 * Level of a bucket that moves toward `target` by `rate` scaled units per elapsed millisecond, never past it.
 * Only a product below the gap (so below 2^53, exact) is ever added to the level.
 */
export function approach(level: number, target: number, elapsedMs: number, rate: number, rising: boolean): number {
  const gap = rising ? target - level : level - target;
  if (gap <= 0) return target;
  // elapsed × rate >= gap, compared without a division: the product is exact whenever it is below 2^53, and
  // rounding a larger one cannot bring it below a gap that is itself below 2^53.
  const moved = elapsedMs * rate;
  if (moved >= gap) return target;
  return rising ? level + moved : level - moved;
}
