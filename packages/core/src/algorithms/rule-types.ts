// The rule as data: each algorithm's parameters, the rule that carries them, and what evaluating rules answers.
// Types only, importing only the State type, so that the algorithm modules (whose factories return a Rule) and
// rules.ts (which runs their steps) both take them from here without importing each other.
import type { State } from './algorithm.js';

export interface FixedWindowParams {
  readonly limit: number;
  readonly windowMs: number;
  /** Boundary shift in [0, windowMs); 0 aligns windows to the epoch. */
  readonly offsetMs: number;
}

export interface GcraParams {
  readonly limit: number;
  readonly periodMs: number;
  readonly burst: number;
}

export interface LeakyBucketParams {
  readonly capacity: number;
  readonly leakRate: number;
  readonly intervalMs: number;
}

export interface SlidingWindowCounterParams {
  readonly limit: number;
  readonly windowMs: number;
}

export interface SlidingWindowLogParams {
  readonly limit: number;
  readonly windowMs: number;
}

export interface TokenBucketParams {
  readonly capacity: number;
  readonly refillRate: number;
  readonly intervalMs: number;
  /** 0 = smooth, 1 = interval. A number so that every executor reads the same parameter list. */
  readonly refill: 0 | 1;
}

export interface ParamsByAlgorithm {
  'fixed-window': FixedWindowParams;
  'sliding-window-log': SlidingWindowLogParams;
  'sliding-window-counter': SlidingWindowCounterParams;
  'token-bucket': TokenBucketParams;
  'leaky-bucket': LeakyBucketParams;
  gcra: GcraParams;
}

export type AlgorithmName = keyof ParamsByAlgorithm;

/** What a store needs to run one rule: plain, serialisable data. */
export type ResolvedRule = {
  [A in AlgorithmName]: {
    readonly id: string;
    readonly algorithm: A;
    readonly params: ParamsByAlgorithm[A];
    /** Capacity in cost units: what decisions and headers report as the limit. */
    readonly limit: number;
  };
}[AlgorithmName];

/** A rule as built by `fixedWindow()`, `tokenBucket()` and the other factories. */
export type Rule = ResolvedRule & {
  /** The time the full capacity takes to come back; reported as the policy window in headers. */
  readonly windowMs: number;
  /** Fixed window only: shift the boundaries per identity by a stable hash of it. */
  readonly stagger: boolean;
};

/** One rule's answer, as reported in a decision. */
export interface RuleOutcome {
  readonly id: string;
  readonly allowed: boolean;
  readonly limit: number;
  readonly remaining: number;
  readonly resetAt: number;
  /** Earliest time the same cost passes this rule; `now` when allowed, -1 when never. */
  readonly retryAt: number;
  /** `take` only: units granted, the same on every rule of the request (0 when none fit). */
  readonly granted?: number;
  /**
   * `reserve` only: when the booked cost starts, epoch ms, the same on every rule. When the request is denied,
   * the start it would have had (beyond `maxWaitMs`), or -1 when the cost can never fit.
   */
  readonly startAt?: number;
}

/** The result of running every rule of a request against the states read for it. */
export interface Evaluation {
  readonly allowed: boolean;
  readonly outcomes: RuleOutcome[];
  /** The states to write, rule by rule, with their time to live; undefined when nothing must be written. */
  readonly writes: Array<{ readonly state: State; readonly ttlMs: number }> | undefined;
}
