/**
 * The shared store's clock as this process sees it, for sending on a booked slot. A booking's start is on the
 * store's clock (Redis `TIME`), which may run apart from this process's, and a reply may sit unread while the event
 * loop is busy: sleeping `startAt − now` from when the reply is read makes the send late by that wait. Each answer
 * bounds the store's lead over the local clock instead: the store read its clock after the call was made and before
 * its reply was read, so the lead lies between (store now − local time read) and (store now − local time asked).
 * Over recent answers the tightest bounds are those of the fastest round trip.
 * - A slot's start on the local clock is at or after (start − the upper bound): its lateness read from that is never
 *   less than the true lateness.
 * - Sleeping until (start − the lower bound) never wakes before the slot.
 * Recent: the current and the previous `WINDOW` answers, so a clock that drifts is followed; a local clock stepped
 * (the bounds cross) starts the estimate again from the answer that shows it.
 */

/** Answers per window of the estimate. */
const WINDOW = 64;

export class StoreClock {
  private low = [-Infinity, -Infinity];
  private high = [Infinity, Infinity];
  private count = 0;

  /** Whether an answer has been seen. */
  get known(): boolean {
    return this.upper !== Infinity;
  }

  private get lower(): number {
    return Math.max(this.low[0]!, this.low[1]!);
  }

  private get upper(): number {
    return Math.min(this.high[0]!, this.high[1]!);
  }

  /** One answer: the store's `now` in it, and the local times (same unit) the call was made at and its reply read. */
  observe(storeNow: number, askedAt: number, readAt: number): void {
    // A local clock stepped back during the call says nothing of the lead.
    if (readAt < askedAt) return;
    const low = storeNow - readAt;
    const high = storeNow - askedAt;
    if (!Number.isFinite(low) || !Number.isFinite(high)) return;
    if (low > this.upper || high < this.lower) {
      // The bounds cross: a clock was stepped. Start again from this answer.
      this.low = [low, -Infinity];
      this.high = [high, Infinity];
      this.count = 1;
      return;
    }
    this.low[0] = Math.max(this.low[0]!, low);
    this.high[0] = Math.min(this.high[0]!, high);
    if (++this.count >= WINDOW) {
      this.low = [-Infinity, this.low[0]!];
      this.high = [Infinity, this.high[0]!];
      this.count = 0;
    }
  }

  /** The earliest local time a store instant can be; undefined before any answer. */
  earliest(storeAt: number): number | undefined {
    return this.known ? storeAt - this.upper : undefined;
  }

  /** The latest local time a store instant can be (sleeping until then never wakes before it); undefined before any answer. */
  latest(storeAt: number): number | undefined {
    return this.known ? storeAt - this.lower : undefined;
  }
}
