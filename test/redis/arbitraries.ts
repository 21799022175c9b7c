/**
 * fast-check generators shared by the Redis suites: valid rules of every algorithm (built by core's own
 * factories, so their parameters obey the same bounds users get) and event sequences that stress the edges:
 * costs of 0 and above capacity, refunds and peeks, tiny steps, large gaps, and a clock that runs backwards.
 */
import fc from 'fast-check';
import {
  fixedWindow,
  gcra,
  leakyBucket,
  slidingWindowCounter,
  slidingWindowLog,
  tokenBucket,
  type StepMode,
  type ResolvedRule,
  type Rule,
} from '@sluice/core';

const small = fc.integer({ min: 1, max: 12 });
const durationMs = fc.oneof(fc.integer({ min: 1, max: 50 }), fc.integer({ min: 51, max: 5_000 }), fc.constantFrom(1_000, 60_000, 86_400_000));

export const ALGORITHMS = ['fixed-window', 'sliding-window-log', 'sliding-window-counter', 'token-bucket-smooth', 'token-bucket-interval', 'leaky-bucket', 'gcra'] as const;
export type AlgorithmCase = (typeof ALGORITHMS)[number];

export function ruleOf(algorithm: AlgorithmCase, id: string): fc.Arbitrary<ResolvedRule> {
  switch (algorithm) {
    case 'fixed-window':
      return fc
        .record({ limit: small, windowMs: durationMs, shift: fc.double({ min: 0, max: 0.999, noNaN: true }) })
        .map(({ limit, windowMs, shift }) => {
          const rule = fixedWindow({ id, limit, window: windowMs });
          // The limiter's stagger option sets offsetMs per identity; cover non-zero offsets directly.
          return { ...rule, params: { ...rule.params, offsetMs: Math.floor(shift * windowMs) } } as Rule;
        });
    case 'sliding-window-log':
      return fc.record({ limit: small, windowMs: durationMs }).map(({ limit, windowMs }) => slidingWindowLog({ id, limit, window: windowMs }));
    case 'sliding-window-counter':
      return fc.record({ limit: small, windowMs: durationMs }).map(({ limit, windowMs }) => slidingWindowCounter({ id, limit, window: windowMs }));
    case 'token-bucket-smooth':
    case 'token-bucket-interval':
      return fc
        .record({ capacity: small, refillRate: fc.integer({ min: 1, max: 2_000 }), intervalMs: durationMs })
        .map(({ capacity, refillRate, intervalMs }) =>
          tokenBucket({ id, capacity, refillRate, interval: intervalMs, refill: algorithm === 'token-bucket-smooth' ? 'smooth' : 'interval' }),
        );
    case 'leaky-bucket':
      return fc
        .record({ capacity: small, leakRate: fc.integer({ min: 1, max: 2_000 }), intervalMs: durationMs })
        .map(({ capacity, leakRate, intervalMs }) => leakyBucket({ id, capacity, leakRate, interval: intervalMs }));
    case 'gcra':
      return fc
        .record({ limit: fc.integer({ min: 1, max: 5_000 }), periodMs: durationMs, burst: fc.option(small, { nil: undefined }) })
        .map(({ limit, periodMs, burst }) => gcra({ id, limit, period: periodMs, burst }));
  }
}

/** One rule of any algorithm, as a rule set. */
export const ruleSets: fc.Arbitrary<ResolvedRule[]> = fc.constantFrom(...ALGORITHMS).chain((algorithm) => ruleOf(algorithm, 'r').map((rule) => [rule]));

/** Two or three rules of any algorithms, distinct ids: the compound (all-or-nothing) case. */
export const compoundRules: fc.Arbitrary<ResolvedRule[]> = fc
  .array(fc.constantFrom(...ALGORITHMS), { minLength: 2, maxLength: 3 })
  .chain((algorithms) => fc.tuple(...algorithms.map((a, i) => ruleOf(a, `r${i}`))));

export interface Event {
  /** Milliseconds since the previous event; negative when the client clock went backwards. */
  readonly deltaMs: number;
  readonly cost: number;
  readonly mode: StepMode;
}

const delta = fc.oneof(
  { weight: 6, arbitrary: fc.integer({ min: 0, max: 30 }) },
  { weight: 3, arbitrary: fc.integer({ min: 31, max: 3_000 }) },
  { weight: 2, arbitrary: fc.integer({ min: -3_000, max: -1 }) },
  { weight: 1, arbitrary: fc.integer({ min: 3_001, max: 100_000_000_000 }) },
);

export function events(maxCost: number, minLength = 1): fc.Arbitrary<Event[]> {
  const cost = fc.oneof(
    { weight: 6, arbitrary: fc.constant(1) },
    { weight: 2, arbitrary: fc.constant(0) },
    { weight: 3, arbitrary: fc.integer({ min: 1, max: maxCost + 3 }) },
  );
  const mode = fc.oneof(
    { weight: 6, arbitrary: fc.constant<StepMode>('consume') },
    { weight: 1, arbitrary: fc.constant<StepMode>('peek') },
    { weight: 2, arbitrary: fc.constant<StepMode>('refund') },
  );
  return fc.array(fc.record({ deltaMs: delta, cost, mode }), { minLength, maxLength: Math.max(40, minLength) });
}

/** A start instant near today's epoch ms, so arithmetic runs at the magnitudes production sees. */
export const startMs = fc.integer({ min: 1_600_000_000_000, max: 1_900_000_000_000 });
