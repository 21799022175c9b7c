/**
 * Exact distribution of small integers (requests per user-period, a user's peak): value -> how many times seen.
 * Memory grows with the distinct values, which are at most the largest count, never with the lines.
 */
/** Values below this are counted in an array (the common case: a few requests per period), larger ones in a map. */
const DENSE = 1024;

export class Histogram {
  private readonly dense = new Float64Array(DENSE);
  private readonly sparse = new Map<number, number>();
  total = 0;

  add(value: number, times = 1): void {
    if (value >= 0 && value < DENSE && Number.isInteger(value)) this.dense[value]! += times;
    else this.sparse.set(value, (this.sparse.get(value) ?? 0) + times);
    this.total += times;
  }

  /** [value, count] pairs by ascending value. */
  entries(): Array<[number, number]> {
    const all: Array<[number, number]> = [...this.sparse.entries()];
    for (let value = 0; value < DENSE; value++) if (this.dense[value]! > 0) all.push([value, this.dense[value]!]);
    return all.sort((a, b) => a[0] - b[0]);
  }

  /** Nearest-rank quantile: the smallest value with at least ceil(q x total) observations at or below it. */
  quantile(q: number): number {
    if (this.total === 0) return 0;
    const rank = Math.max(1, Math.ceil(q * this.total));
    let seen = 0;
    for (const [value, count] of this.entries()) {
      seen += count;
      if (seen >= rank) return value;
    }
    return this.max();
  }

  max(): number {
    let max = 0;
    for (const [value] of this.entries()) if (value > max) max = value;
    return max;
  }

  /** How many observations are above `value`. */
  above(value: number): number {
    let n = 0;
    for (const [v, count] of this.entries()) if (v > value) n += count;
    return n;
  }

  /**
   * The smallest limit L >= 1 such that at most `allowed` observations exceed it: with one observation per user
   * (its peak count in a period), a fixed window of that period and limit L refuses at most `allowed` users.
   * `above(L)` only drops at an observed value, so L is 1 or one of them.
   */
  smallestLimitWithAtMost(allowed: number): number {
    let above = this.total;
    if (above <= allowed) return 1;
    for (const [value, count] of this.entries()) {
      above -= count;
      if (above <= allowed) return Math.max(1, value);
    }
    return 1;
  }
}
