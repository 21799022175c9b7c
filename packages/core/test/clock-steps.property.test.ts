/**
 * The bug this pins: executors disagreed when the clock stepped back. Every executor (memory, SQLite, the Lua on
 * Redis and Upstash) must give the same answers for any clock sequence, and they differ in only one way: how long a
 * record outlives its expiry (memory and SQLite ignore it from `now >= expiresAt`; Redis with the client's clock
 * keeps it for its own time to live plus a slack). So the steps themselves must make that difference invisible:
 * - a state read at or after its expiry (`writtenAt + ttlMs`) answers exactly like no state, backwards steps
 *   before the read included (the state and every field of the outcome);
 * - a write whose ttl is at or below 0 is a deletion (every executor deletes instead of writing);
 * - cost 0 (a read) and refunds are always allowed, whatever the state holds.
 * The generators step the clock backwards (a little, a window, before the first event), as several app servers
 * with skewed clocks do.
 */
import fc from 'fast-check';
import { describe, expect, test } from 'vitest';
import { stepRule, type ResolvedRule, type State, type StepOperation } from '../src/store/index.js';
import { PLAIN, forEachCase, slidingWindowCounterCase, type AlgorithmCase } from './support/cases.js';
import { RUNS, CLOCK_START, costArb, moveArb, operationArb } from './support/scenario.js';

interface Record {
  state: State;
  expiresAt: number;
}

function scenario<P>(c: AlgorithmCase<P>) {
  return c.params.chain((params) => {
    const event = fc.record({ move: moveArb(c.scaleMs(params)), cost: costArb(c.capacity(params)), operation: operationArb(true) }, PLAIN);
    return fc.record(
      {
        params: fc.constant(params),
        events: fc.array(event, { minLength: 1, maxLength: 40 }),
        probeGap: fc.oneof(fc.constant(0), fc.integer({ min: 0, max: 3 * c.scaleMs(params) }), fc.integer({ min: 0, max: 1e10 })),
        probeCost: costArb(c.capacity(params)),
        probeOperation: operationArb(true),
      },
      PLAIN,
    );
  });
}

/** Plays events the way an executor does (expired records read as none; ttl <= 0 deletes), yielding each record kept. */
function* records(rule: ResolvedRule, events: ReadonlyArray<{ move: number; cost: number; operation: StepOperation }>): Generator<Record> {
  let now = CLOCK_START;
  let record: Record | undefined;
  for (const event of events) {
    now = Math.max(0, now + event.move);
    const state = record !== undefined && record.expiresAt > now ? record.state : undefined;
    const step = stepRule(rule, state, now, event.cost, event.operation);
    const writes = event.cost > 0 && (event.operation === 'refund' || (event.operation === 'consume' && step.allowed));
    if (writes) record = step.ttlMs > 0 ? { state: step.next, expiresAt: now + step.ttlMs } : undefined;
    if (record !== undefined) yield record;
  }
}

function clockStepProperties<P>(c: AlgorithmCase<P>): void {
  describe(c.name, () => {
    test('a state read at or after its expiry answers exactly like no state, after backward steps too', () => {
      fc.assert(
        fc.property(scenario(c), ({ params, events, probeGap, probeCost, probeOperation }) => {
          const rule = c.rule(params);
          for (const record of records(rule, events)) {
            const at = record.expiresAt + probeGap;
            const kept = stepRule(rule, record.state, at, probeCost, probeOperation);
            const none = stepRule(rule, undefined, at, probeCost, probeOperation);
            expect({ ...kept, next: [...kept.next] }).toEqual({ ...none, next: [...none.next] });
          }
        }),
        RUNS,
      );
    });

    test('cost 0 and refunds are allowed whatever the state and the clock', () => {
      fc.assert(
        fc.property(scenario(c), fc.integer({ min: -1e6, max: 1e6 }), ({ params, events, probeCost }, back) => {
          const rule = c.rule(params);
          for (const record of records(rule, events)) {
            const at = Math.max(0, record.expiresAt + back);
            expect(stepRule(rule, record.state, at, 0, 'peek').allowed).toBe(true);
            expect(stepRule(rule, record.state, at, 0, 'consume').allowed).toBe(true);
            expect(stepRule(rule, record.state, at, probeCost, 'refund').allowed).toBe(true);
          }
        }),
        RUNS,
      );
    });
  });
}

describe('clock steps, backward ones included: what every executor relies on', () => {
  forEachCase(clockStepProperties);

  test('regression: a sliding window counter after a backward step allows cost 0 (was denied on every executor)', () => {
    const rule = slidingWindowCounterCase.rule({ limit: 1, windowMs: 10 });
    const first = stepRule(rule, undefined, 996, 1, 'consume');
    const second = stepRule(rule, first.next, 1002, 1, 'consume');
    expect(second.allowed).toBe(true);
    expect(stepRule(rule, second.next, 999, 0, 'peek').allowed).toBe(true);
  });
});
