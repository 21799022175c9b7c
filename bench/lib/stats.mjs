// Small statistics over per-round timings. Rounds are few (5 to 15), so plain sorts are fine.

export function median(values) {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = sorted.length >> 1;
  return sorted.length % 2 === 1 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2;
}

/** (max − min) / median, in percent: how much the rounds of one contestant disagreed. */
export function spreadPct(values) {
  const m = median(values);
  if (m === 0) return 0;
  return ((Math.max(...values) - Math.min(...values)) / m) * 100;
}

/** A deterministic PRNG (mulberry32), so every run and every contestant sees the same identity sequence. */
export function prng(seed) {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}
