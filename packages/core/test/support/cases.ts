import fc from 'fast-check';
import { fixedWindow, gcra, leakyBucket, slidingWindowCounter, slidingWindowLog, tokenBucket, type Rule } from '../../src/index.js';
import { hash32 } from '../../src/shared/identity.js';
import {
  fixedWindowModel,
  gcraModel,
  intervalTokenBucketModel,
  leakyBucketModel,
  slidingWindowCounterModel,
  slidingWindowLogModel,
  smoothTokenBucketModel,
  type Model,
} from './models.js';

/** One algorithm under test: generated parameters, the rule they build, and the reference model for them. */
export interface AlgorithmCase<P> {
  readonly name: string;
  readonly params: fc.Arbitrary<P>;
  rule(params: P): Rule;
  model(params: P): Model;
  /** Identity the requests are made for (drives the fixed window's stagger offset). */
  identity(params: P): string;
  /** A natural time scale for generated clock advances. */
  scaleMs(params: P): number;
  capacity(params: P): number;
  /** Admitted cost in [t1, t2] may not exceed this (the algorithm's interval contract), for t1 <= t2. */
  bound(params: P, t1: number, t2: number): number;
}

/** Small windows hit every boundary case; 1 ms and whole seconds/minutes keep the corners honest. */
const windowMs = fc.oneof(fc.integer({ min: 1, max: 10 }), fc.integer({ min: 1, max: 2_000 }), fc.constantFrom(1_000, 60_000));
const small = (max: number) => fc.integer({ min: 1, max });
/** Plain objects print without `__proto__: null` in counterexamples. */
export const PLAIN = { noNullPrototype: true } as const;

export const fixedWindowCase: AlgorithmCase<{ limit: number; windowMs: number; stagger: boolean; identity: string }> = {
  name: 'fixed window',
  params: fc.record({ limit: small(8), windowMs, stagger: fc.boolean(), identity: fc.string({ minLength: 1, maxLength: 6 }) }, PLAIN),
  rule: (p) => fixedWindow({ limit: p.limit, window: p.windowMs, stagger: p.stagger }),
  // The stagger offset is defined as hash32(identity) mod window; windows are [k·W + offset, (k+1)·W + offset).
  model: (p) => fixedWindowModel(p.limit, p.windowMs, p.stagger ? hash32(p.identity) % p.windowMs : 0),
  identity: (p) => p.identity,
  scaleMs: (p) => p.windowMs,
  capacity: (p) => p.limit,
  bound: () => Number.POSITIVE_INFINITY, // checked per window instead (see contracts test)
};

export const slidingWindowLogCase: AlgorithmCase<{ limit: number; windowMs: number }> = {
  name: 'sliding window log',
  params: fc.record({ limit: small(8), windowMs }, PLAIN),
  rule: (p) => slidingWindowLog({ limit: p.limit, window: p.windowMs }),
  model: (p) => slidingWindowLogModel(p.limit, p.windowMs),
  identity: () => 'user',
  scaleMs: (p) => p.windowMs,
  capacity: (p) => p.limit,
  // Any window (t − W, t], i.e. t2 − t1 < W, holds at most `limit`.
  bound: (p, t1, t2) => (t2 - t1 < p.windowMs ? p.limit : Number.POSITIVE_INFINITY),
};

export const slidingWindowCounterCase: AlgorithmCase<{ limit: number; windowMs: number }> = {
  name: 'sliding window counter',
  params: fc.record({ limit: small(8), windowMs }, PLAIN),
  rule: (p) => slidingWindowCounter({ limit: p.limit, window: p.windowMs }),
  model: (p) => slidingWindowCounterModel(p.limit, p.windowMs),
  identity: () => 'user',
  scaleMs: (p) => p.windowMs,
  capacity: (p) => p.limit,
  // Documented worst case: 2 × limit in one sliding window (the per-fixed-window bound is checked separately).
  bound: (p, t1, t2) => (t2 - t1 < p.windowMs ? 2 * p.limit : Number.POSITIVE_INFINITY),
};

type BucketParams = { capacity: number; rate: number; intervalMs: number };
const bucketParams: fc.Arbitrary<BucketParams> = fc.record({ capacity: small(8), rate: small(5), intervalMs: windowMs }, PLAIN);
/** capacity + rate · (t2 − t1) / interval, rounded down (admitted cost is an integer). */
const smoothBound = (capacity: number, rate: number, intervalMs: number, t1: number, t2: number) =>
  capacity + Math.floor((rate * (t2 - t1)) / intervalMs);

export const smoothTokenBucketCase: AlgorithmCase<BucketParams> = {
  name: 'token bucket (smooth refill)',
  params: bucketParams,
  rule: (p) => tokenBucket({ capacity: p.capacity, refillRate: p.rate, interval: p.intervalMs }),
  model: (p) => smoothTokenBucketModel(p.capacity, p.rate, p.intervalMs),
  identity: () => 'user',
  scaleMs: (p) => Math.ceil((p.capacity * p.intervalMs) / p.rate),
  capacity: (p) => p.capacity,
  bound: (p, t1, t2) => smoothBound(p.capacity, p.rate, p.intervalMs, t1, t2),
};

export const intervalTokenBucketCase: AlgorithmCase<BucketParams> = {
  name: 'token bucket (interval refill)',
  params: bucketParams,
  rule: (p) => tokenBucket({ capacity: p.capacity, refillRate: p.rate, interval: p.intervalMs, refill: 'interval' }),
  model: (p) => intervalTokenBucketModel(p.capacity, p.rate, p.intervalMs),
  identity: () => 'user',
  scaleMs: (p) => p.intervalMs,
  capacity: (p) => p.capacity,
  // capacity + rate × (refill instants in (t1, t2]).
  bound: (p, t1, t2) => p.capacity + p.rate * (Math.floor(t2 / p.intervalMs) - Math.floor(t1 / p.intervalMs)),
};

export const leakyBucketCase: AlgorithmCase<BucketParams> = {
  name: 'leaky bucket',
  params: bucketParams,
  rule: (p) => leakyBucket({ capacity: p.capacity, leakRate: p.rate, interval: p.intervalMs }),
  model: (p) => leakyBucketModel(p.capacity, p.rate, p.intervalMs),
  identity: () => 'user',
  scaleMs: (p) => Math.ceil((p.capacity * p.intervalMs) / p.rate),
  capacity: (p) => p.capacity,
  bound: (p, t1, t2) => smoothBound(p.capacity, p.rate, p.intervalMs, t1, t2),
};

type GcraCaseParams = { limit: number; periodMs: number; burst: number };
export const gcraCase: AlgorithmCase<GcraCaseParams> = {
  name: 'GCRA',
  // Limits above the period exercise rates faster than one unit per millisecond.
  params: fc.record({ limit: fc.oneof(small(5), small(50)), periodMs: windowMs, burst: small(8) }, PLAIN),
  rule: (p) => gcra({ limit: p.limit, period: p.periodMs, burst: p.burst }),
  model: (p) => gcraModel(p.limit, p.periodMs, p.burst),
  identity: () => 'user',
  scaleMs: (p) => Math.max(1, Math.ceil((p.burst * p.periodMs) / p.limit)),
  capacity: (p) => p.burst,
  bound: (p, t1, t2) => smoothBound(p.burst, p.limit, p.periodMs, t1, t2),
};

/** Runs `define` once per algorithm case, for properties that hold for all of them. */
export function forEachCase(define: <P>(c: AlgorithmCase<P>) => void): void {
  define(fixedWindowCase);
  define(slidingWindowLogCase);
  define(slidingWindowCounterCase);
  define(smoothTokenBucketCase);
  define(intervalTokenBucketCase);
  define(leakyBucketCase);
  define(gcraCase);
}
