/**
 * Every algorithm, driven through a real limiter with a fake clock, must give the same decisions as its plain
 * reference model (test/support/models.ts), event by event: allowed, reason, remaining, resetAt, retryAt and
 * retryAfter, over generated sequences of clock advances (0, small, around the window, huge gaps), costs
 * (0, within and over capacity) and operations (consume, peek, refund), with and without expiry of stale state.
 */
import fc from 'fast-check';
import { describe, expect, test } from 'vitest';
import {
  fixedWindowCase,
  gcraCase,
  intervalTokenBucketCase,
  leakyBucketCase,
  slidingWindowCounterCase,
  slidingWindowLogCase,
  smoothTokenBucketCase,
  PLAIN,
  type AlgorithmCase,
} from './support/cases.js';
import { expectEvent } from './support/models.js';
import { RUNS, CLOCK_START, eventsArb, play, type Step } from './support/scenario.js';

/** What a step looks like in a failure diff: times relative to the start, so counterexamples read like a story. */
function actual(step: Step) {
  const { decision: d } = step;
  const rule = d.rules[0]!;
  return {
    event: step.index,
    atMs: step.now - CLOCK_START,
    allowed: d.allowed,
    reason: d.reason,
    remaining: d.remaining,
    resetAtMs: d.resetAt - CLOCK_START,
    retryAtMs: rule.retryAt === -1 ? 'never' : rule.retryAt - CLOCK_START,
    retryAfter: d.retryAfter,
  };
}

function modelProperty<P>(c: AlgorithmCase<P>): void {
  test(`${c.name} decides like its reference model, event by event`, () => {
    const scenario = c.params.chain((params) =>
      fc.record(
        {
          params: fc.constant(params),
          expire: fc.boolean(),
          events: eventsArb(c.scaleMs(params), c.capacity(params), { refunds: true, maxLength: 30 }),
        },
        PLAIN,
      ),
    );
    fc.assert(
      fc.property(scenario, ({ params, expire, events }) => {
        const model = c.model(params);
        play(c.rule(params), c.identity(params), events, { expire }, (step) => {
          const want = expectEvent(model, step.now, step.event.cost, step.event.operation);
          const never = want.retryAt === -1;
          expect(actual(step)).toEqual({
            event: step.index,
            atMs: step.now - CLOCK_START,
            allowed: want.allowed,
            reason: want.allowed ? 'ok' : never ? 'cost_exceeds_limit' : 'rate_limited',
            remaining: want.remaining,
            resetAtMs: want.resetAt - CLOCK_START,
            retryAtMs: never ? 'never' : want.retryAt - CLOCK_START,
            retryAfter: want.allowed ? 0 : never ? Number.POSITIVE_INFINITY : want.retryAt - step.now,
          });
        });
      }),
      RUNS,
    );
  }, 60_000);
}

describe('algorithms against reference models', () => {
  modelProperty(fixedWindowCase);
  modelProperty(slidingWindowLogCase);
  modelProperty(slidingWindowCounterCase);
  modelProperty(smoothTokenBucketCase);
  modelProperty(intervalTokenBucketCase);
  modelProperty(leakyBucketCase);
  modelProperty(gcraCase);
});
