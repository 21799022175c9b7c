import fc from 'fast-check';
import { createLimiter, type Decision, type Rule } from '../../src/index.js';
import { MapStore } from './map-store.js';
import type { StepOperation } from './models.js';

/** Epoch ms of 2025-01-01T00:00:00Z: a multiple of every unit (1 ms ... 1 day), so relative times read naturally. */
export const CLOCK_START = Date.UTC(2025, 0, 1);

/** One generated request, printed as-is in shrunk counterexamples. */
export interface Event {
  /** Milliseconds the fake clock moves before the request (0 = same instant). */
  advanceMs: number;
  cost: number;
  operation: StepOperation;
}

/**
 * Clock advances that hit the interesting spots: the same instant, about the time one unit takes to come back
 * (so traffic hovers at the limit and many requests are denied), around a whole window, and huge gaps.
 */
export function advanceArb(scaleMs: number, capacity: number): fc.Arbitrary<number> {
  const perUnit = Math.max(1, Math.ceil(scaleMs / capacity));
  return fc.oneof(
    { arbitrary: fc.constant(0), weight: 4 },
    { arbitrary: fc.integer({ min: 1, max: perUnit }), weight: 8 },
    { arbitrary: fc.integer({ min: 1, max: 2 * scaleMs + 1 }), weight: 2 },
    { arbitrary: fc.constantFrom(scaleMs - 1, scaleMs, scaleMs + 1).filter((d) => d >= 0), weight: 1 },
    { arbitrary: fc.integer({ min: 0, max: 1e10 }), weight: 1 },
  );
}

/** Clock moves with backward steps: small, about a window, and back past the first event. */
export function moveArb(scaleMs: number): fc.Arbitrary<number> {
  return fc.oneof(
    { arbitrary: fc.constant(0), weight: 2 },
    { arbitrary: fc.integer({ min: 1, max: scaleMs + 1 }), weight: 6 },
    { arbitrary: fc.integer({ min: -scaleMs - 1, max: -1 }), weight: 4 },
    { arbitrary: fc.integer({ min: -3 * scaleMs, max: 3 * scaleMs }), weight: 2 },
    { arbitrary: fc.integer({ min: -1e9, max: 1e9 }), weight: 1 },
  );
}

/** Costs of 0, within capacity (mostly 1) and just over it. */
export function costArb(capacity: number): fc.Arbitrary<number> {
  return fc.oneof(
    { arbitrary: fc.constant(1), weight: 6 },
    { arbitrary: fc.integer({ min: 0, max: capacity }), weight: 4 },
    { arbitrary: fc.integer({ min: capacity + 1, max: capacity + 3 }), weight: 1 },
  );
}

export function operationArb(withRefund: boolean): fc.Arbitrary<StepOperation> {
  return fc.oneof(
    { arbitrary: fc.constant<StepOperation>('consume'), weight: 7 },
    { arbitrary: fc.constant<StepOperation>('peek'), weight: 2 },
    { arbitrary: fc.constant<StepOperation>(withRefund ? 'refund' : 'consume'), weight: 1 },
  );
}

export function eventsArb(scaleMs: number, capacity: number, options: { refunds: boolean; maxLength: number }): fc.Arbitrary<Event[]> {
  const event = fc.record(
    { advanceMs: advanceArb(scaleMs, capacity), cost: costArb(capacity), operation: operationArb(options.refunds) },
    { noNullPrototype: true },
  );
  return fc.array(event, { minLength: 1, maxLength: options.maxLength, size: 'max' });
}

export interface Step {
  index: number;
  /** Epoch ms of the request. */
  now: number;
  event: Event;
  decision: Decision;
}

/** A limiter over a fresh MapStore with a fake clock; `at(t)` moves the clock. */
export function harness(rules: Rule | Rule[], options: { expire?: boolean; name?: string } = {}) {
  let clock = CLOCK_START;
  const store = new MapStore(options.expire ?? true);
  const limiter = createLimiter({ store, rules, name: options.name ?? 'prop', clock: () => clock });
  return {
    store,
    limiter,
    set now(value: number) {
      clock = value;
    },
    get now(): number {
      return clock;
    },
  };
}

/** Plays the events through a limiter over a MapStore with a fake clock, calling `check` after each. */
export function play(
  rule: Rule,
  identity: string,
  events: readonly Event[],
  options: { expire?: boolean } = {},
  check?: (step: Step, store: MapStore) => void,
): Step[] {
  const h = harness(rule, options);
  const steps: Step[] = [];
  events.forEach((event, index) => {
    h.now += event.advanceMs;
    const call =
      event.operation === 'consume' ? h.limiter.limitSync : event.operation === 'peek' ? h.limiter.peekSync : h.limiter.refundSync;
    const decision = call.call(h.limiter, identity, { cost: event.cost });
    const step = { index, now: h.now, event, decision };
    steps.push(step);
    check?.(step, h.store);
  });
  return steps;
}

/** Property-run settings: moderate, so the suite stays fast on a busy two-core machine. */
export const RUNS = { numRuns: 120 } as const;
