/**
 * fast-check generators shared by the Redis suites: valid rules of every algorithm (built by core's own
 * factories, so their parameters obey the same bounds users get) and event sequences that stress the edges:
 * costs of 0 and above capacity, refunds and peeks, takes and reservations (with no wait allowed, a short one and
 * a huge one), tiny steps, large gaps, and a clock that runs backwards.
 */
import fc from 'fast-check';
import {
  fixedWindow,
  gcra,
  leakyBucket,
  slidingWindowCounter,
  slidingWindowLog,
  tokenBucket,
  type AlgorithmName,
  type Rule,
} from '@sluice/core';
import { ALGORITHM_NAMES, type Operation, type ResolvedRule } from '@sluice/core/store';

const small = fc.integer({ min: 1, max: 12 });
const durationMs = fc.oneof(
  fc.integer({ min: 1, max: 50 }),
  fc.integer({ min: 51, max: 5_000 }),
  fc.constantFrom(1_000, 60_000, 86_400_000),
);

/**
 * A generator of rules for every algorithm core names, one per variant the script runs as its own step (the token
 * bucket's two refills). Keyed by core's AlgorithmName, so a new algorithm does not compile here until it has one.
 */
export const GENERATORS: { readonly [A in AlgorithmName]: Readonly<Record<string, (id: string) => fc.Arbitrary<ResolvedRule>>> } = {
  'fixed-window': {
    'fixed-window': (id) =>
      fc
        .record({ limit: small, windowMs: durationMs, shift: fc.double({ min: 0, max: 0.999, noNaN: true }) })
        .map(({ limit, windowMs, shift }) => {
          const rule = fixedWindow({ id, limit, window: windowMs });
          // The limiter's stagger option sets offsetMs per identity; cover non-zero offsets directly.
          return { ...rule, params: { ...rule.params, offsetMs: Math.floor(shift * windowMs) } } as Rule;
        }),
  },
  'sliding-window-log': {
    'sliding-window-log': (id) =>
      fc.record({ limit: small, windowMs: durationMs }).map(({ limit, windowMs }) => slidingWindowLog({ id, limit, window: windowMs })),
  },
  'sliding-window-counter': {
    'sliding-window-counter': (id) =>
      fc.record({ limit: small, windowMs: durationMs }).map(({ limit, windowMs }) => slidingWindowCounter({ id, limit, window: windowMs })),
  },
  'token-bucket': {
    'token-bucket-smooth': (id) => tokenBuckets(id, 'smooth'),
    'token-bucket-interval': (id) => tokenBuckets(id, 'interval'),
  },
  'leaky-bucket': {
    'leaky-bucket': (id) =>
      fc
        .record({ capacity: small, leakRate: fc.integer({ min: 1, max: 2_000 }), intervalMs: durationMs })
        .map(({ capacity, leakRate, intervalMs }) => leakyBucket({ id, capacity, leakRate, interval: intervalMs })),
  },
  gcra: {
    gcra: (id) =>
      fc
        .record({ limit: fc.integer({ min: 1, max: 5_000 }), periodMs: durationMs, burst: fc.option(small, { nil: undefined }) })
        .map(({ limit, periodMs, burst }) => gcra({ id, limit, period: periodMs, burst })),
  },
};

function tokenBuckets(id: string, refill: 'smooth' | 'interval'): fc.Arbitrary<ResolvedRule> {
  return fc
    .record({ capacity: small, refillRate: fc.integer({ min: 1, max: 2_000 }), intervalMs: durationMs })
    .map(({ capacity, refillRate, intervalMs }) => tokenBucket({ id, capacity, refillRate, interval: intervalMs, refill }));
}

/**
 * The differential cases: every variant of every algorithm in core's ALGORITHM_NAMES, in its order. Derived, not
 * listed, so an algorithm core adds cannot skip the JS-vs-Lua suites (test/harness/arbitraries.test.ts fails while
 * it has no generator).
 */
export const ALGORITHMS: readonly string[] = differentialCases(ALGORITHM_NAMES, GENERATORS);

/** The variants of every named algorithm; throws, naming it, for an algorithm without a generator. */
export function differentialCases(
  names: readonly string[],
  generators: Readonly<Record<string, Readonly<Record<string, unknown>>>>,
): string[] {
  return names.flatMap((name) => {
    const variants = generators[name];
    if (variants === undefined || Object.keys(variants).length === 0) {
      throw new Error(`test/harness/arbitraries.ts: core's algorithm ${JSON.stringify(name)} has no rule generator in GENERATORS; add one`);
    }
    return Object.keys(variants);
  });
}
export type AlgorithmCase = string;

/** Rules of one differential case (a name in ALGORITHMS). */
export function ruleOf(algorithm: AlgorithmCase, id: string): fc.Arbitrary<ResolvedRule> {
  for (const name of ALGORITHM_NAMES) {
    const generate = GENERATORS[name][algorithm];
    if (generate !== undefined) return generate(id);
  }
  throw new Error(`no differential case ${JSON.stringify(algorithm)}; the cases are ${ALGORITHMS.join(', ')}`);
}

/** One rule of any algorithm, as a rule set. */
export const ruleSets: fc.Arbitrary<ResolvedRule[]> = fc
  .constantFrom(...ALGORITHMS)
  .chain((algorithm) => ruleOf(algorithm, 'r').map((rule) => [rule]));

/** Two or three rules of any algorithms, distinct ids: the compound (all-or-nothing) case. */
export const compoundRules: fc.Arbitrary<ResolvedRule[]> = fc
  .array(fc.constantFrom(...ALGORITHMS), { minLength: 2, maxLength: 3 })
  .chain((algorithms) => fc.tuple(...algorithms.map((a, i) => ruleOf(a, `r${i}`))));

export interface Event {
  /** Milliseconds since the previous event; negative when the client clock went backwards. */
  readonly deltaMs: number;
  readonly cost: number;
  readonly operation: Operation;
  /** `reserve` only: the longest wait accepted, ms (0 when absent). */
  readonly maxWaitMs?: number;
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
  const operation = fc.oneof(
    { weight: 6, arbitrary: fc.constant<Operation>('consume') },
    { weight: 1, arbitrary: fc.constant<Operation>('peek') },
    { weight: 2, arbitrary: fc.constant<Operation>('refund') },
    { weight: 2, arbitrary: fc.constant<Operation>('take') },
    { weight: 2, arbitrary: fc.constant<Operation>('reserve') },
  );
  // Read by reserve only: no wait allowed, a short wait, and one long enough to book far into the future.
  const maxWaitMs = fc.oneof(fc.constant(0), fc.integer({ min: 1, max: 5_000 }), fc.integer({ min: 5_001, max: 2 ** 40 }));
  return fc.array(fc.record({ deltaMs: delta, cost, operation, maxWaitMs }), { minLength, maxLength: Math.max(40, minLength) });
}

/** A start instant near today's epoch ms, so arithmetic runs at the magnitudes production sees. */
export const startMs = fc.integer({ min: 1_600_000_000_000, max: 1_900_000_000_000 });
