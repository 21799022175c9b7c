// The floor: what a token bucket costs with nothing but a Map lookup and the arithmetic. Same semantics as
// sluice's smooth token bucket (integer level scaled by the interval, so refill per ms is an integer), one small
// object per identity, no other allocation, a boolean answer. Also reads Date.now() per decision, as any limiter must.
import { CAPACITY, REFILL_PER_SECOND } from './workload.mjs';

const INTERVAL_MS = 1000;
const FULL = CAPACITY * INTERVAL_MS;
const RATE = REFILL_PER_SECOND; // scaled units per ms
const NEED = INTERVAL_MS; // one token

export function createFloor() {
  const buckets = new Map();
  return (identity) => step(buckets, identity, Date.now());
}

/** One token from the identity's bucket at `now`: true when there was one. */
function step(buckets, identity, now) {
  let bucket = buckets.get(identity);
  if (bucket === undefined) {
    bucket = { level: FULL, last: now };
    buckets.set(identity, bucket);
  }
  let level = bucket.level + (now - bucket.last) * RATE;
  if (level > FULL) level = FULL;
  bucket.last = now;
  if (level >= NEED) {
    bucket.level = level - NEED;
    return true;
  }
  bucket.level = level;
  return false;
}

/**
 * The floor answering what sluice answers: the same bucket, returning a decision of sluice's shape (ten fields and
 * a one-rule report in an array) instead of a boolean. The difference from the floor is what that answer costs.
 */
export function createFloorWithDecision() {
  const buckets = new Map();
  const windowMs = (CAPACITY / REFILL_PER_SECOND) * INTERVAL_MS;
  return function decide(identity) {
    const now = Date.now();
    const allowed = step(buckets, identity, now);
    const resetAt = now + windowMs;
    const retryAt = allowed ? now : now + INTERVAL_MS / REFILL_PER_SECOND;
    return {
      allowed,
      reason: allowed ? 'ok' : 'rate_limited',
      limit: CAPACITY,
      remaining: allowed ? 1 : 0,
      resetAt,
      retryAfter: retryAt - now,
      degraded: false,
      rule: 'tb',
      rules: [{ id: 'tb', allowed, limit: CAPACITY, remaining: allowed ? 1 : 0, resetAt, retryAt, windowMs }],
      now,
    };
  };
}
