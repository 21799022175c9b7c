/**
 * Plain reference models of every algorithm, written from the textbook definitions rather than from the steps:
 * exact rationals instead of scaled integers, explicit per-window maps and request logs instead of packed
 * state. `resetAt` and `retryAt` are not computed by formula at all: they are found by searching forward in time
 * for the first millisecond at which the model is idle, or at which the same cost would fit.
 */
import { add, cmp, div, floor, max, min, mul, rat, sub, type Rational } from './rational.js';

export interface Model {
  /** Largest cost that can ever pass. */
  readonly capacity: number;
  /** After this long without traffic the rule is idle, whatever came before. Bounds the searches. */
  readonly recoveryMs: number;
  /** Would `cost` pass at time x, given no traffic between the last event and x? */
  fits(x: number, cost: number): boolean;
  /** Whole cost units left at x. */
  remaining(x: number): number;
  /** Nothing in use at x: the rule is back at full capacity. */
  idle(x: number): boolean;
  take(x: number, cost: number): void;
  giveBack(x: number, cost: number): void;
}

export type StepOperation = 'consume' | 'peek' | 'refund';

export interface Expected {
  allowed: boolean;
  remaining: number;
  resetAt: number;
  /** -1 when the cost can never fit. */
  retryAt: number;
}

/** Smallest integer x in [lo, hi] with pred(x), for pred false...false true...true; undefined if pred(hi) fails. */
export function firstTime(lo: number, hi: number, pred: (x: number) => boolean): number | undefined {
  if (!pred(hi)) return undefined;
  while (lo < hi) {
    const mid = lo + Math.floor((hi - lo) / 2);
    if (pred(mid)) hi = mid;
    else lo = mid + 1;
  }
  return lo;
}

/** Applies one event to the model and says what the limiter must answer. */
export function expectEvent(model: Model, now: number, cost: number, operation: StepOperation): Expected {
  let allowed = true;
  if (operation === 'refund') {
    if (cost > 0) model.giveBack(now, cost);
  } else {
    allowed = model.fits(now, cost);
    if (allowed && operation === 'consume' && cost > 0) model.take(now, cost);
  }
  const horizon = now + model.recoveryMs;
  const resetAt = firstTime(now, horizon, (x) => model.idle(x));
  if (resetAt === undefined) throw new Error('model bug: not idle after recoveryMs');
  let retryAt = now;
  if (!allowed) retryAt = firstTime(now, horizon, (x) => model.fits(x, cost)) ?? -1;
  if ((retryAt === -1) !== (cost > model.capacity && !allowed)) throw new Error('model bug: never-fits disagrees with capacity');
  return { allowed, remaining: model.remaining(now), resetAt, retryAt };
}

/** Fixed windows [k·W + offset, (k+1)·W + offset), one counter each. */
export function fixedWindowModel(limit: number, windowMs: number, offsetMs: number): Model {
  const counts = new Map<number, number>();
  const windowOf = (x: number) => Math.floor((x - offsetMs) / windowMs);
  const used = (x: number) => counts.get(windowOf(x)) ?? 0;
  return {
    capacity: limit,
    recoveryMs: windowMs,
    fits: (x, cost) => used(x) + cost <= limit,
    remaining: (x) => limit - used(x),
    idle: (x) => used(x) === 0,
    take: (x, cost) => void counts.set(windowOf(x), used(x) + cost),
    giveBack: (x, cost) => void counts.set(windowOf(x), Math.max(0, used(x) - cost)),
  };
}

/** Every admitted request logged with its time; a request counts while it is in (x − W, x]. */
export function slidingWindowLogModel(limit: number, windowMs: number): Model {
  const log: Array<{ at: number; cost: number }> = [];
  const live = (x: number) => log.filter((e) => e.at > x - windowMs && e.at <= x);
  const used = (x: number) => live(x).reduce((sum, e) => sum + e.cost, 0);
  return {
    capacity: limit,
    recoveryMs: windowMs,
    fits: (x, cost) => used(x) + cost <= limit,
    remaining: (x) => Math.max(0, limit - used(x)),
    idle: (x) => used(x) === 0,
    take: (x, cost) => void log.push({ at: x, cost }),
    // A refund gives back the most recent admissions first.
    giveBack: (x, cost) => {
      for (const entry of live(x).reverse()) {
        const back = Math.min(cost, entry.cost);
        entry.cost -= back;
        cost -= back;
      }
    },
  };
}

/**
 * The estimate of the article 'Designing a rate limiter': current window count plus the previous one weighted by its
 * overlap, rounded down.
 */
export function slidingWindowCounterModel(limit: number, windowMs: number): Model {
  const counts = new Map<number, number>();
  const windowOf = (x: number) => Math.floor(x / windowMs);
  const estimate = (x: number) => {
    const k = windowOf(x);
    const overlap = rat((k + 1) * windowMs - x, windowMs); // share of the sliding window still in window k − 1
    return floor(mul(rat(counts.get(k - 1) ?? 0), overlap)) + (counts.get(k) ?? 0);
  };
  return {
    capacity: limit,
    recoveryMs: 2 * windowMs,
    fits: (x, cost) => estimate(x) + cost <= limit,
    remaining: (x) => Math.max(0, limit - estimate(x)),
    idle: (x) => estimate(x) === 0,
    take: (x, cost) => void counts.set(windowOf(x), (counts.get(windowOf(x)) ?? 0) + cost),
    // Only the current window's own count can be given back.
    giveBack: (x, cost) => void counts.set(windowOf(x), Math.max(0, (counts.get(windowOf(x)) ?? 0) - cost)),
  };
}

/** Tokens as an exact rational, refilled continuously at rate/interval per ms, capped at capacity. */
export function smoothTokenBucketModel(capacity: number, refillRate: number, intervalMs: number): Model {
  const full = rat(capacity);
  let tokens = full;
  let last: number | undefined;
  const at = (x: number): Rational =>
    last === undefined ? full : min(full, add(tokens, rat(BigInt(refillRate) * BigInt(x - last), intervalMs)));
  return {
    capacity,
    recoveryMs: capacity * intervalMs + 1,
    fits: (x, cost) => cmp(at(x), rat(cost)) >= 0,
    remaining: (x) => floor(at(x)),
    idle: (x) => cmp(at(x), full) === 0,
    take: (x, cost) => {
      tokens = sub(at(x), rat(cost));
      last = x;
    },
    giveBack: (x, cost) => {
      tokens = min(full, add(at(x), rat(cost)));
      last = x;
    },
  };
}

/** Whole tokens, `refillRate` more at every multiple of the interval since the epoch, capped at capacity. */
export function intervalTokenBucketModel(capacity: number, refillRate: number, intervalMs: number): Model {
  let tokens = capacity;
  let lastTick: number | undefined;
  const tick = (x: number) => Math.floor(x / intervalMs);
  const at = (x: number) => (lastTick === undefined ? capacity : Math.min(capacity, tokens + refillRate * (tick(x) - lastTick)));
  return {
    capacity,
    recoveryMs: (capacity + 1) * intervalMs,
    fits: (x, cost) => at(x) >= cost,
    remaining: (x) => at(x),
    idle: (x) => at(x) === capacity,
    take: (x, cost) => {
      tokens = at(x) - cost;
      lastTick = tick(x);
    },
    giveBack: (x, cost) => {
      tokens = Math.min(capacity, at(x) + cost);
      lastTick = tick(x);
    },
  };
}

/** Water level as an exact rational, draining continuously at leakRate/interval per ms, never below 0. */
export function leakyBucketModel(capacity: number, leakRate: number, intervalMs: number): Model {
  const zero = rat(0);
  let level = zero;
  let last: number | undefined;
  const at = (x: number): Rational =>
    last === undefined ? zero : max(zero, sub(level, rat(BigInt(leakRate) * BigInt(x - last), intervalMs)));
  return {
    capacity,
    recoveryMs: capacity * intervalMs + 1,
    fits: (x, cost) => cmp(add(at(x), rat(cost)), rat(capacity)) <= 0,
    remaining: (x) => floor(sub(rat(capacity), at(x))),
    idle: (x) => cmp(at(x), zero) === 0,
    take: (x, cost) => {
      level = add(at(x), rat(cost));
      last = x;
    },
    giveBack: (x, cost) => {
      level = max(zero, sub(at(x), rat(cost)));
      last = x;
    },
  };
}

/**
 * Textbook GCRA on a rational theoretical arrival time: emission interval T = period / limit, a request of cost c
 * passes when max(TAT, x) + c·T − x <= burst·T.
 */
export function gcraModel(limit: number, periodMs: number, burst: number): Model {
  const emission = rat(periodMs, limit);
  const tolerance = mul(rat(burst), emission);
  let tat: Rational | undefined;
  const ahead = (x: number): Rational => (tat === undefined ? rat(0) : max(rat(0), sub(tat, rat(x))));
  return {
    capacity: burst,
    recoveryMs: burst * periodMs + 1,
    fits: (x, cost) => cmp(add(ahead(x), mul(rat(cost), emission)), tolerance) <= 0,
    remaining: (x) => floor(div(sub(tolerance, ahead(x)), emission)),
    idle: (x) => cmp(ahead(x), rat(0)) === 0,
    take: (x, cost) => {
      tat = add(rat(x), add(ahead(x), mul(rat(cost), emission)));
    },
    giveBack: (x, cost) => {
      tat = add(rat(x), max(rat(0), sub(ahead(x), mul(rat(cost), emission))));
    },
  };
}
