/**
 * The take and reserve operations, checked against the step operations they are defined on, for every algorithm
 * and for compound rules, from states reached by random histories of every operation with backward clock steps, huge
 * gaps, cost 0 and costs above capacity:
 * - take grants g = what repeated consumes of 1 at that instant would admit, never more than a consume allows,
 *   the same g on every rule, and leaves exactly the state a consume of g leaves;
 * - reserve's startAt is the earliest instant (at or after now and the states' own times) at which a consume of
 *   the cost passes every rule (a peek at startAt passes; at startAt − 1 it does not), -1 exactly when the cost
 *   exceeds a rule's capacity; it books only within maxWaitMs, and books a consume at startAt.
 */
import fc from 'fast-check';
import { describe, expect, test } from 'vitest';
import { NEVER, evaluate, type Evaluation, type Operation, type ResolvedRule, type State } from '../src/store/index.js';
import { stateTime } from '../src/store/operations.js';
import {
  PLAIN,
  forEachCase,
  gcraCase,
  slidingWindowLogCase,
  smoothTokenBucketCase,
  fixedWindowCase,
  type AlgorithmCase,
} from './support/cases.js';
import { RUNS, CLOCK_START, costArb } from './support/scenario.js';

const OPERATIONS: readonly Operation[] = ['consume', 'peek', 'refund', 'take', 'reserve'];

/** Clock moves: the same instant, small and window-sized steps both ways, and huge gaps. */
function moveArb(scaleMs: number): fc.Arbitrary<number> {
  return fc.oneof(
    { arbitrary: fc.constant(0), weight: 3 },
    { arbitrary: fc.integer({ min: 1, max: scaleMs + 1 }), weight: 6 },
    { arbitrary: fc.integer({ min: -scaleMs - 1, max: -1 }), weight: 3 },
    { arbitrary: fc.integer({ min: -1e9, max: 1e10 }), weight: 1 },
  );
}

const waitArb = fc.oneof(fc.constant(0), fc.integer({ min: 0, max: 5_000 }), fc.integer({ min: 0, max: 2 ** 40 }));

interface World {
  states: Array<State | undefined>;
  expiresAt: number[];
  now: number;
}

/** Applies one evaluation the way an executor does (writes with their ttl; ttl <= 0 deletes). */
function apply(world: World, evaluation: Evaluation): void {
  if (evaluation.writes === undefined) return;
  evaluation.writes.forEach((write, i) => {
    world.states[i] = write.ttlMs > 0 ? write.state : undefined;
    world.expiresAt[i] = write.ttlMs > 0 ? world.now + write.ttlMs : 0;
  });
}

/** The states an executor would read at `now` (expired ones read as none). */
function read(world: World, now: number): Array<State | undefined> {
  return world.states.map((s, i) => (s !== undefined && world.expiresAt[i]! > now ? s : undefined));
}

function scenario(cases: ReadonlyArray<AlgorithmCase<unknown>>) {
  return fc.tuple(...cases.map((c) => c.params)).chain((params) => {
    const scale = Math.max(...cases.map((c, i) => c.scaleMs(params[i])));
    const capacity = Math.max(...cases.map((c, i) => c.capacity(params[i])));
    const event = fc.record(
      { move: moveArb(scale), cost: costArb(capacity), operation: fc.constantFrom(...OPERATIONS), maxWaitMs: waitArb },
      PLAIN,
    );
    return fc.record(
      {
        params: fc.constant(params),
        history: fc.array(event, { maxLength: 25 }),
        probe: fc.record({ move: moveArb(scale), cost: costArb(capacity), maxWaitMs: waitArb }, PLAIN),
      },
      PLAIN,
    );
  });
}

/** Plays the history, then hands the probe's states and time to `check`. */
function play(
  rules: readonly ResolvedRule[],
  history: ReadonlyArray<{ move: number; cost: number; operation: Operation; maxWaitMs: number }>,
  probeMove: number,
): { states: Array<State | undefined>; now: number } {
  const world: World = { states: rules.map(() => undefined), expiresAt: rules.map(() => 0), now: CLOCK_START };
  for (const event of history) {
    world.now = Math.max(0, world.now + event.move);
    apply(world, evaluate(rules, read(world, world.now), world.now, event.cost, event.operation, event.maxWaitMs));
  }
  const now = Math.max(0, world.now + probeMove);
  return { states: read(world, now), now };
}

function checkTake(rules: readonly ResolvedRule[], states: Array<State | undefined>, now: number, cost: number): void {
  const take = evaluate(rules, states, now, cost, 'take');
  const granted = take.outcomes[0]!.granted!;
  for (const outcome of take.outcomes) expect(outcome.granted, 'the same grant on every rule').toBe(granted);
  expect(granted).toBeGreaterThanOrEqual(0);
  expect(granted).toBeLessThanOrEqual(cost);
  // Repeated consumes of 1 at the same instant admit exactly `granted`.
  let current = states;
  let admitted = 0;
  while (admitted < cost) {
    const one = evaluate(rules, current, now, 1, 'consume');
    if (!one.allowed) break;
    admitted++;
    current = one.writes!.map((w) => (w.ttlMs > 0 ? w.state : undefined));
  }
  expect(granted, 'take grants what repeated consumes of 1 admit').toBe(admitted);
  // Never more than a consume allows, and the same writes as a consume of what was granted.
  if (granted < cost)
    expect(evaluate(rules, states, now, granted + 1, 'consume').allowed, 'a consume of one more unit is denied').toBe(false);
  if (granted > 0) {
    const consume = evaluate(rules, states, now, granted, 'consume');
    expect(consume.allowed).toBe(true);
    expect(take.writes).toEqual(consume.writes);
    expect(take.allowed).toBe(true);
  } else {
    expect(take.writes).toBeUndefined();
    expect(take.allowed).toBe(cost === 0);
  }
}

function checkReserve(
  rules: readonly ResolvedRule[],
  states: Array<State | undefined>,
  now: number,
  cost: number,
  maxWaitMs: number,
): void {
  const reserve = evaluate(rules, states, now, cost, 'reserve', maxWaitMs);
  const startAt = reserve.outcomes[0]!.startAt!;
  for (const outcome of reserve.outcomes) expect(outcome.startAt, 'the same start on every rule').toBe(startAt);
  if (startAt === NEVER) {
    expect(
      rules.some((r) => cost > r.limit),
      'NEVER only for a cost above a rule capacity',
    ).toBe(true);
    expect(reserve.allowed).toBe(false);
    expect(reserve.writes).toBeUndefined();
    return;
  }
  expect(rules.every((r) => cost <= r.limit)).toBe(true);
  if (cost === 0) {
    // A read: nothing to book, it starts now.
    expect([startAt, reserve.allowed, reserve.writes]).toEqual([now, true, undefined]);
    return;
  }
  const earliest = Math.max(now, ...rules.map((r, i) => (states[i] === undefined ? now : stateTime(r, states[i]!))));
  expect(startAt).toBeGreaterThanOrEqual(earliest);
  expect(evaluate(rules, states, startAt, cost, 'peek').allowed, 'a consume passes at startAt').toBe(true);
  if (startAt > earliest && cost > 0) expect(evaluate(rules, states, startAt - 1, cost, 'peek').allowed, 'and not 1 ms before').toBe(false);
  const within = startAt - now <= maxWaitMs;
  expect(reserve.allowed).toBe(within);
  if (within && cost > 0) {
    // The booking is a consume at startAt, its ttl counted from now.
    const booked = evaluate(rules, states, startAt, cost, 'consume');
    expect(reserve.writes).toEqual(booked.writes!.map((w) => ({ state: w.state, ttlMs: w.ttlMs + (startAt - now) })));
  } else {
    expect(reserve.writes).toBeUndefined();
  }
}

describe('take and reserve, defined on the steps', () => {
  forEachCase(<P>(c: AlgorithmCase<P>) => {
    const cases = [c as AlgorithmCase<unknown>];
    test(`${c.name}: take equals repeated consumes of 1 and never exceeds what a consume allows`, () => {
      fc.assert(
        fc.property(scenario(cases), ({ params, history, probe }) => {
          const rules = [c.rule(params[0] as P)];
          const { states, now } = play(rules, history, probe.move);
          checkTake(rules, states, now, probe.cost);
        }),
        RUNS,
      );
    });
    test(`${c.name}: reserve starts at the earliest instant a consume passes, books only within maxWaitMs`, () => {
      fc.assert(
        fc.property(scenario(cases), ({ params, history, probe }) => {
          const rules = [c.rule(params[0] as P)];
          const { states, now } = play(rules, history, probe.move);
          checkReserve(rules, states, now, probe.cost, probe.maxWaitMs);
        }),
        RUNS,
      );
    });
  });

  forEachCase(<P>(c: AlgorithmCase<P>) => {
    test(`${c.name}: with a clock that does not step back, a later reserve never starts before an earlier booking`, () => {
      const cases = [c as AlgorithmCase<unknown>];
      // No refunds here: a refund gives units back, booked ones included (it may cancel a booking).
      const forward = scenario(cases).map((s) => ({
        ...s,
        history: s.history.map((e) => ({
          ...e,
          move: Math.abs(e.move),
          operation: e.operation === 'refund' ? ('peek' as const) : e.operation,
        })),
      }));
      fc.assert(
        fc.property(forward, ({ params, history }) => {
          const rules = [c.rule(params[0] as P)];
          const world: World = { states: [undefined], expiresAt: [0], now: CLOCK_START };
          let lastBooking = Number.NEGATIVE_INFINITY;
          for (const event of history) {
            world.now += event.move;
            const evaluation = evaluate(rules, read(world, world.now), world.now, event.cost, event.operation, event.maxWaitMs);
            if (event.operation === 'reserve' && evaluation.allowed && event.cost > 0) {
              const startAt = evaluation.outcomes[0]!.startAt!;
              expect(startAt, 'queued behind the previous booking').toBeGreaterThanOrEqual(lastBooking);
              lastBooking = startAt;
            }
            apply(world, evaluation);
          }
        }),
        RUNS,
      );
    });
  });

  const pairs: Array<[AlgorithmCase<unknown>, AlgorithmCase<unknown>]> = [
    [smoothTokenBucketCase as AlgorithmCase<unknown>, fixedWindowCase as AlgorithmCase<unknown>],
    [gcraCase as AlgorithmCase<unknown>, slidingWindowLogCase as AlgorithmCase<unknown>],
  ];
  for (const [a, b] of pairs) {
    test(`compound ${a.name} + ${b.name}: one grant on every rule, the latest start over the rules, all-or-nothing`, () => {
      fc.assert(
        fc.property(scenario([a, b]), ({ params, history, probe }) => {
          const rules = [
            { ...a.rule(params[0]), id: 'a' },
            { ...b.rule(params[1]), id: 'b' },
          ] as ResolvedRule[];
          const { states, now } = play(rules, history, probe.move);
          checkTake(rules, states, now, probe.cost);
          checkReserve(rules, states, now, probe.cost, probe.maxWaitMs);
        }),
        RUNS,
      );
    });
  }

  test('reserve: later requests queue behind a booking (a token bucket of 1 per second)', () => {
    const rules = [smoothTokenBucketCase.rule({ capacity: 1, rate: 1, intervalMs: 1_000 })];
    const world: World = { states: [undefined], expiresAt: [0], now: CLOCK_START };
    const starts: number[] = [];
    for (let i = 0; i < 4; i++) {
      const evaluation = evaluate(rules, read(world, CLOCK_START), CLOCK_START, 1, 'reserve', 10_000);
      starts.push(evaluation.outcomes[0]!.startAt! - CLOCK_START);
      apply(world, evaluation);
    }
    expect(starts).toEqual([0, 1_000, 2_000, 3_000]);
    // A consume now is denied until the last booking has passed.
    const consume = evaluate(rules, read(world, CLOCK_START), CLOCK_START, 1, 'consume');
    expect([consume.allowed, consume.outcomes[0]!.retryAt - CLOCK_START]).toEqual([false, 4_000]);
  });
});
