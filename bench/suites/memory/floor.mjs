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
  return function take(identity) {
    const now = Date.now();
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
  };
}
