/**
 * Puts slightly out-of-order log lines back in time order before the replay. Workers of one server write their
 * lines a few milliseconds apart and logs from several servers interleave, but the limiter saw the requests in
 * the order they arrived. A line is held until the log has reached `windowMs` past its time, then released in time
 * order (ties keep input order). A line later than that is released at once with its own time: the clock steps
 * back for the replay, which every algorithm's step tolerates (core's README, "Clocks that step back"), and it is
 * counted in `late`. Memory is bounded by the lines within the window, at most `capacity`; past that, the oldest
 * line is released early (counted in `forced`).
 *
 * A sorted array with insertion from the end, not a heap: log lines arrive almost sorted, so a new line is nearly
 * always appended, and one out of order moves only the few lines it belongs before.
 */
export class ReorderBuffer {
  /** Lines that arrived with a time before an earlier line's. */
  outOfOrder = 0;
  /** Lines later than the window: replayed with a clock that steps back. */
  late = 0;
  /** Lines released before the window passed because the buffer was full. */
  forced = 0;
  private times: Float64Array;
  private ids: Int32Array;
  private head = 0;
  private tail = 0;
  private maxSeen = -Infinity;
  private lastReleased = -Infinity;

  constructor(
    private readonly windowMs: number,
    private readonly release: (identity: number, time: number) => void,
    private readonly capacity = 1 << 20,
  ) {
    const initial = Math.min(capacity, 1 << 12);
    this.times = new Float64Array(initial * 2);
    this.ids = new Int32Array(initial * 2);
  }

  push(identity: number, time: number): void {
    if (time < this.maxSeen) {
      this.outOfOrder++;
      if (time < this.lastReleased) this.late++;
    } else {
      this.maxSeen = time;
    }
    if (this.windowMs === 0) {
      this.emit(identity, time);
      return;
    }
    if (this.tail - this.head >= this.capacity) {
      this.forced++;
      this.emit(this.ids[this.head]!, this.times[this.head]!);
      this.head++;
    }
    if (this.tail === this.times.length) this.makeRoom();
    const times = this.times;
    let at = this.tail;
    if (at > this.head && times[at - 1]! > time) {
      // Upper bound in [head, tail): after every line at or before `time`, so ties keep input order.
      let lo = this.head;
      let hi = this.tail;
      while (lo < hi) {
        const mid = (lo + hi) >>> 1;
        if (times[mid]! <= time) lo = mid + 1;
        else hi = mid;
      }
      at = lo;
      times.copyWithin(at + 1, at, this.tail);
      this.ids.copyWithin(at + 1, at, this.tail);
    }
    times[at] = time;
    this.ids[at] = identity;
    this.tail++;
    const due = this.maxSeen - this.windowMs;
    while (this.head < this.tail && times[this.head]! <= due) {
      this.emit(this.ids[this.head]!, times[this.head]!);
      this.head++;
    }
  }

  /** Releases every held line, at the end of the input. */
  flush(): void {
    while (this.head < this.tail) {
      this.emit(this.ids[this.head]!, this.times[this.head]!);
      this.head++;
    }
    this.head = 0;
    this.tail = 0;
  }

  private emit(identity: number, time: number): void {
    if (time > this.lastReleased) this.lastReleased = time;
    this.release(identity, time);
  }

  /** Slides the held lines to the front, or doubles the arrays when they fill more than half. */
  private makeRoom(): void {
    const held = this.tail - this.head;
    if (held * 2 > this.times.length) {
      const times = new Float64Array(this.times.length * 2);
      const ids = new Int32Array(this.times.length * 2);
      times.set(this.times.subarray(this.head, this.tail));
      ids.set(this.ids.subarray(this.head, this.tail));
      this.times = times;
      this.ids = ids;
    } else {
      this.times.copyWithin(0, this.head, this.tail);
      this.ids.copyWithin(0, this.head, this.tail);
    }
    this.head = 0;
    this.tail = held;
  }
}
