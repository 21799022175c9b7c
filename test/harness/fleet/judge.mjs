/**
 * Judges a fleet's admissions the way the callers' clients and a third party see them: by the wall clock around
 * each call, never by the limiter's own `decision.now`.
 *
 * Each admission is the interval [start, end]: `Date.now()` just before the call and just after its answer. It may
 * count in any fixed window that overlaps that interval. For each identity the windows are filled with the
 * assignment that leaves the fewest admissions over the limit (earliest-deadline-first: walk the windows in order,
 * and give each window the admissions that can go there and must go soonest), so the limiter's own latency never
 * counts against it. What no assignment can fit is over the limit.
 */

/**
 * @typedef {object} Admissions
 * @property {Int32Array | number[]} identity   the identity's index, one per admission
 * @property {Float64Array | number[]} start    Date.now() just before the call (epoch ms)
 * @property {Float64Array | number[]} end      Date.now() just after its answer (epoch ms)
 * @property {number} length
 */

/**
 * @typedef {object} Verdict
 * @property {number} admitted       admissions judged
 * @property {number} over           admissions no assignment fits within the limit
 * @property {number} worstWindow    the most admissions in one identity-window after the best assignment (over ones included)
 * @property {number} worstRatio     worstWindow ÷ limit
 * @property {number} overWindows    identity-windows holding an admission over the limit
 * @property {Array<{ identity: number, window: number, admitted: number }>} worst  the worst identity-windows, most first (up to 5)
 */

/**
 * @param {Admissions} admissions
 * @param {{ limit: number, windowMs: number, offsetMs?: number }} rule  a fixed window of `limit` per `windowMs`
 * @returns {Verdict}
 */
export function judgeFixedWindow(admissions, rule) {
  const { limit, windowMs } = rule;
  const offset = rule.offsetMs ?? 0;
  if (!(Number.isSafeInteger(limit) && limit > 0 && windowMs > 0))
    throw new Error(`judgeFixedWindow: limit and windowMs must be positive, got ${limit} per ${windowMs} ms`);
  const n = admissions.length;
  // Admissions of one identity together, by their first possible window.
  const lo = new Float64Array(n);
  const hi = new Float64Array(n);
  const order = new Uint32Array(n);
  for (let i = 0; i < n; i++) {
    const start = admissions.start[i];
    const end = admissions.end[i];
    if (!(end >= start)) throw new Error(`judgeFixedWindow: admission ${i} ends (${end}) before it starts (${start})`);
    lo[i] = Math.floor((start - offset) / windowMs);
    hi[i] = Math.floor((end - offset) / windowMs);
    order[i] = i;
  }
  order.sort((a, b) => admissions.identity[a] - admissions.identity[b] || lo[a] - lo[b]);

  let over = 0;
  let worstWindow = 0;
  let overWindows = 0;
  /** @type {Array<{ identity: number, window: number, admitted: number }>} */
  const worst = [];
  const note = (identity, window, admitted) => {
    if (admitted > worstWindow) worstWindow = admitted;
    if (admitted <= limit) return;
    overWindows++;
    worst.push({ identity, window, admitted });
    worst.sort((a, b) => b.admitted - a.admitted);
    if (worst.length > 5) worst.pop();
  };

  let at = 0;
  while (at < n) {
    const identity = admissions.identity[order[at]];
    let stop = at;
    while (stop < n && admissions.identity[order[stop]] === identity) stop++;
    // Earliest deadline first over this identity's windows; `heap` holds the waiting admissions' last windows.
    const heap = new MinHeap();
    /** window -> admissions placed in it (within the limit) and over it */
    const filled = new Map();
    const overIn = new Map();
    let next = at;
    let window = lo[order[at]];
    while (next < stop || heap.size > 0) {
      if (heap.size === 0 && lo[order[next]] > window) window = lo[order[next]];
      while (next < stop && lo[order[next]] === window) heap.push(hi[order[next++]]);
      let placed = 0;
      while (heap.size > 0) {
        const last = heap.peek();
        if (last < window) {
          // Its interval ended in an earlier, full window: over the limit there.
          heap.pop();
          over++;
          overIn.set(last, (overIn.get(last) ?? 0) + 1);
          continue;
        }
        if (placed === limit) break;
        heap.pop();
        placed++;
      }
      if (placed > 0) filled.set(window, placed);
      window++;
    }
    for (const [w, placed] of filled) note(identity, w, placed + (overIn.get(w) ?? 0));
    for (const [w, extra] of overIn) if (!filled.has(w)) note(identity, w, extra);
    at = stop;
  }
  return { admitted: n, over, worstWindow, worstRatio: worstWindow / limit, overWindows, worst };
}

/** A binary min-heap of numbers. */
class MinHeap {
  constructor() {
    /** @type {number[]} */
    this.items = [];
  }
  get size() {
    return this.items.length;
  }
  peek() {
    return this.items[0];
  }
  push(value) {
    const items = this.items;
    let i = items.push(value) - 1;
    while (i > 0) {
      const parent = (i - 1) >> 1;
      if (items[parent] <= value) break;
      items[i] = items[parent];
      i = parent;
    }
    items[i] = value;
  }
  pop() {
    const items = this.items;
    const top = items[0];
    const last = items.pop();
    if (items.length > 0) {
      let i = 0;
      for (;;) {
        const left = 2 * i + 1;
        if (left >= items.length) break;
        const right = left + 1;
        const child = right < items.length && items[right] < items[left] ? right : left;
        if (items[child] >= last) break;
        items[i] = items[child];
        i = child;
      }
      items[i] = last;
    }
    return top;
  }
}
