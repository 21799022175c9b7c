/**
 * Requests and refusals over time, for the report's chart: per time bucket, [requests, refused by candidate 1,
 * refused by candidate 2, ...]. Buckets start at the candidates' window (`timelineBucketMs`), aligned to the epoch
 * as a fixed window is, and double whenever there would be more than MAX_BUCKETS, so a log of any length keeps a
 * few thousand buckets and a bucket always holds whole windows. Shorter buckets would cut windows apart: a fixed
 * window refuses at its end, and 10 s buckets of 1-minute windows drew a saw of full and empty buckets.
 */
const MAX_BUCKETS = 2048;

export interface TimelineBucket {
  /** Epoch ms the bucket starts at. */
  readonly start: number;
  readonly requests: number;
  /** Refusals per candidate, in the order the candidates were given. */
  readonly refused: number[];
}

/** Longest base bucket, ms: windows with a larger least common multiple use the longest window instead. */
const MAX_BASE_MS = 86_400_000;

/**
 * The shortest bucket holding whole windows of every candidate: the least common multiple of their windows (the
 * longest window when that is over a day), or `periodMs` without candidates.
 */
export function timelineBucketMs(windowsMs: readonly number[], periodMs: number): number {
  if (windowsMs.length === 0) return periodMs;
  let multiple = 1;
  for (const w of windowsMs) {
    multiple = (multiple / gcd(multiple, w)) * w;
    if (multiple > MAX_BASE_MS) return Math.max(...windowsMs);
  }
  return multiple;
}

function gcd(a: number, b: number): number {
  while (b !== 0) [a, b] = [b, a % b];
  return a;
}

export class Timeline {
  private readonly buckets = new Map<number, Float64Array>();
  private lastIndex = NaN;
  private last: Float64Array = new Float64Array(0);

  /** @param bucketMs the first bucket length (`timelineBucketMs`) */
  constructor(
    private readonly candidates: number,
    public bucketMs = 1000,
  ) {}

  /** The counters of the bucket holding `now` (index 0: requests; k + 1: candidate k's refusals). */
  slot(now: number): Float64Array {
    const index = Math.floor(now / this.bucketMs);
    if (index === this.lastIndex) return this.last;
    let slot = this.buckets.get(index);
    if (slot === undefined) {
      if (this.buckets.size >= MAX_BUCKETS) {
        this.coarsen();
        return this.slot(now);
      }
      slot = new Float64Array(this.candidates + 1);
      this.buckets.set(index, slot);
    }
    this.lastIndex = index;
    this.last = slot;
    return slot;
  }

  list(): TimelineBucket[] {
    return [...this.buckets.entries()]
      .sort((a, b) => a[0] - b[0])
      .map(([index, slot]) => ({ start: index * this.bucketMs, requests: slot[0]!, refused: Array.from(slot.subarray(1)) }));
  }

  /** Doubles the bucket length, merging pairs of buckets. */
  private coarsen(): void {
    const merged = new Map<number, Float64Array>();
    for (const [index, slot] of this.buckets) {
      const into = Math.floor(index / 2);
      const target = merged.get(into);
      if (target === undefined) merged.set(into, slot);
      else for (let i = 0; i < slot.length; i++) target[i]! += slot[i]!;
    }
    this.buckets.clear();
    for (const [index, slot] of merged) this.buckets.set(index, slot);
    this.bucketMs *= 2;
    this.lastIndex = NaN;
  }
}
