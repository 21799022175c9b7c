/**
 * The `take` and `reserve` operations, defined once on top of the algorithm steps (consume and peek), so that every
 * algorithm and every executor gets them with one semantics. `evaluate()` dispatches here.
 *
 * take(cost): grants g = min(cost, room) units now, where room is the least `remaining` over the rules read with
 * a cost-0 peek (the most a consume would admit on that rule: `remaining` is exactly that for every algorithm,
 * checked by the property tests), and consumes g from every rule. g = 0 is an answer, not an error: nothing is
 * written and the outcomes are those of a peek of one unit (so `retryAt` says when one unit fits).
 *
 * reserve(cost, maxWaitMs): finds s, the earliest instant at or after now, and at or after the time every rule's
 * state was last moved to (a booking or a clock that stepped back: later requests queue behind it), at which a
 * consume of `cost` passes every rule if nothing else arrives. If s − now <= maxWaitMs, the cost is consumed on
 * every rule as at time s (the booking) and s is returned as `startAt`; otherwise nothing is written and s is
 * reported as the start it would have had. A cost larger than a rule's capacity is refused at once (NEVER).
 * The search is exact for any state: passing is monotone in time when nothing arrives, so a doubling search
 * followed by a bisection over whole milliseconds finds the first passing instant (about 2 × log2(wait) peeks).
 */
import { NEVER, type State, type StepOutcome } from '../algorithms/algorithm.js';
import { stepRule, type AlgorithmName, type Evaluation, type ResolvedRule, type RuleOutcome } from '../algorithms/rules.js';

/** Latest instant a reservation may be searched to; far beyond any rule's window (factories keep those below 2^53 / capacity). */
const SEARCH_LIMIT_MS = 2 ** 52;

/** The time a rule's state was last moved to (its window start, last entry or last decision); GCRA's TAT orders requests by itself. */
const STATE_TIME: { readonly [A in AlgorithmName]: (state: State) => number } = {
  'fixed-window': (s) => s[0]!,
  'sliding-window-counter': (s) => s[0]!,
  'sliding-window-log': (s) => (s.length >= 2 ? s[s.length - 2]! : 0),
  'token-bucket': (s) => s[1]!,
  'leaky-bucket': (s) => s[1]!,
  gcra: () => 0,
};

/** The time a rule's state was last moved to: a reservation never starts before it (see the header). */
export function stateTime(rule: ResolvedRule, state: State): number {
  return STATE_TIME[rule.algorithm](state);
}

function outcome(rule: ResolvedRule, step: StepOutcome, extra: { granted?: number; startAt?: number }): RuleOutcome {
  return {
    id: rule.id,
    allowed: step.allowed,
    limit: rule.limit,
    remaining: step.remaining,
    resetAt: step.resetAt,
    retryAt: step.retryAt,
    ...extra,
  };
}

export function takeEvaluation(
  rules: readonly ResolvedRule[],
  states: ReadonlyArray<State | undefined>,
  now: number,
  cost: number,
): Evaluation {
  let room = cost;
  const reads: StepOutcome[] = [];
  for (let i = 0; i < rules.length; i++) {
    const read = stepRule(rules[i]!, states[i], now, 0, 'peek');
    reads.push(read);
    if (read.remaining < room) room = read.remaining;
  }
  const granted = Math.max(0, room);
  if (cost === 0) {
    return { allowed: true, outcomes: reads.map((r, i) => outcome(rules[i]!, r, { granted: 0 })), writes: undefined };
  }
  if (granted === 0) {
    const peeks = rules.map((rule, i) => stepRule(rule, states[i], now, 1, 'peek'));
    return { allowed: false, outcomes: peeks.map((p, i) => outcome(rules[i]!, p, { granted: 0 })), writes: undefined };
  }
  const steps = rules.map((rule, i) => stepRule(rule, states[i], now, granted, 'consume'));
  return {
    allowed: true,
    outcomes: steps.map((s, i) => outcome(rules[i]!, s, { granted })),
    writes: steps.map((s) => ({ state: s.next, ttlMs: s.ttlMs })),
  };
}

export function reserveEvaluation(
  rules: readonly ResolvedRule[],
  states: ReadonlyArray<State | undefined>,
  now: number,
  cost: number,
  maxWaitMs: number,
): Evaluation {
  const peeks = rules.map((rule, i) => stepRule(rule, states[i], now, cost, 'peek'));
  if (cost === 0) {
    return { allowed: true, outcomes: peeks.map((p, i) => outcome(rules[i]!, p, { startAt: now })), writes: undefined };
  }
  let lowest = now;
  for (let i = 0; i < rules.length; i++) {
    const peek = peeks[i]!;
    if (peek.retryAt === NEVER) return never(rules, peeks);
    // Every step's retryAt is a lower bound on when the cost fits, and a state's own time bounds the queue.
    if (!peek.allowed && peek.retryAt > lowest) lowest = peek.retryAt;
    const state = states[i];
    if (state !== undefined) lowest = Math.max(lowest, stateTime(rules[i]!, state));
  }
  const startAt = firstPassing(rules, states, cost, lowest);
  if (startAt === NEVER) return never(rules, peeks);
  if (startAt - now > maxWaitMs) {
    // Too far away: nothing is booked, and every rule reports the start the request would have had.
    return {
      allowed: false,
      outcomes: peeks.map((p, i) => ({ ...outcome(rules[i]!, p, { startAt }), allowed: false, retryAt: startAt })),
      writes: undefined,
    };
  }
  const steps = rules.map((rule, i) => stepRule(rule, states[i], startAt, cost, 'consume'));
  return {
    allowed: true,
    outcomes: steps.map((s, i) => outcome(rules[i]!, s, { startAt })),
    // A step's ttl counts from its own time (startAt); executors count from the request's.
    writes: steps.map((s) => ({ state: s.next, ttlMs: s.ttlMs + (startAt - now) })),
  };
}

function never(rules: readonly ResolvedRule[], peeks: readonly StepOutcome[]): Evaluation {
  return { allowed: false, outcomes: peeks.map((p, i) => outcome(rules[i]!, p, { startAt: NEVER })), writes: undefined };
}

function passes(rules: readonly ResolvedRule[], states: ReadonlyArray<State | undefined>, cost: number, at: number): boolean {
  for (let i = 0; i < rules.length; i++) if (!stepRule(rules[i]!, states[i], at, cost, 'peek').allowed) return false;
  return true;
}

/** The first instant >= from at which the cost passes every rule, or NEVER if none before SEARCH_LIMIT_MS. */
function firstPassing(rules: readonly ResolvedRule[], states: ReadonlyArray<State | undefined>, cost: number, from: number): number {
  if (passes(rules, states, cost, from)) return from;
  let failing = from;
  let stride = 1;
  let passing = from + stride;
  while (!passes(rules, states, cost, passing)) {
    failing = passing;
    stride *= 2;
    if (failing + stride > SEARCH_LIMIT_MS) return NEVER;
    passing = failing + stride;
  }
  while (passing - failing > 1) {
    const middle = failing + Math.floor((passing - failing) / 2);
    if (passes(rules, states, cost, middle)) passing = middle;
    else failing = middle;
  }
  return passing;
}
