/**
 * Replays requests through the candidate rules with core's own step (`stepRule` from @sluice/core/store), one
 * independent state per identity and candidate, exactly as the memory store keeps it: a consumed request writes
 * the step's next state with its time to live, a refusal writes nothing, a state read at or after its expiry is
 * no state, and a state worth nothing (ttl <= 0) is dropped. Each request costs 1.
 *
 * Alongside, it measures the traffic itself as the article 'Rate Limiting' (Hunter Fernandes) does: requests per
 * identity per period (a "user-period"), and each identity's peak over its periods. A clock that steps back into an
 * earlier period counts in the current one: a period only moves forward, so a user-period is never counted twice.
 *
 * Memory: a few numbers per identity and candidate, plus the distinct counts; nothing per line. The hot loop
 * allocates nothing either: core's `stepRuleInto` writes each outcome into the candidate's reused scratch (fixed window, sliding
 * window counter, token bucket and GCRA without allocating), an allowed step's state is copied into the identity's
 * place in a flat typed array (see `flat`), and the per-identity numbers live in typed arrays, identity-major.
 */
import type { State, StepScratch } from '@sluice/core/store';
import { newStepScratch, stepRuleInto } from '@sluice/core/store';
import type { Candidate } from './candidates.js';
import { Histogram } from './histogram.js';
import { Timeline, timelineBucketMs } from './timeline.js';

export interface CandidateOutcome {
  readonly label: string;
  readonly algorithm: string;
  readonly limit: number;
  readonly windowMs: number;
  readonly requestsRefused: number;
  readonly usersAffected: number;
  readonly userPeriodsAffected: number;
}

interface CandidateCounts {
  readonly candidate: Candidate;
  /** Its own scratch: states of different lengths in one would resize `next` at every step. */
  readonly scratch: StepScratch;
  /** The state handed to the step, filled from `flat` (one array per candidate, reused). */
  readonly held: number[];
  refused: number;
  usersAffected: number;
  userPeriodsAffected: number;
}

const INITIAL_IDENTITIES = 1 << 10;
/** Numbers of a state kept in the flat array; every algorithm's but the sliding window log's fits. */
const FLAT = 4;
/** `lengths` value of a state kept in an array of its own. */
const SPILLED = 255;

export class Replay {
  requests = 0;
  firstTime = Infinity;
  lastTime = -Infinity;
  readonly userPeriods = new Histogram();
  readonly timeline: Timeline;
  private readonly candidates: CandidateCounts[];
  /** Identities seen: the highest identity number + 1. */
  private count = 0;
  // Per identity: its open period (-1 none), requests in it, its peak so far.
  private period = new Float64Array(INITIAL_IDENTITIES).fill(-1);
  private inPeriod = new Float64Array(INITIAL_IDENTITIES);
  private peak = new Float64Array(INITIAL_IDENTITIES);
  // Per identity and candidate, at identity × candidates + k: the state (an array reused across steps; meaningful
  // while now < expiresAt, so "no state" is -Infinity), and the period of the last refusal (-1 before the first:
  // counts identities and user-periods affected once each).
  // A state of up to FLAT numbers is kept in `flat` at (identity × candidates + k) × FLAT, its length in `lengths`:
  // one place per identity, where arrays of their own were scattered over the heap (a cache miss per step with
  // 150,000 identities). Longer states (a sliding window log's) keep an array of their own in `states` (SPILLED).
  private flat = new Float64Array(0);
  private lengths = new Uint8Array(0);
  private states: Array<number[] | undefined> = [];
  private expiresAt = new Float64Array(0);
  private refusedIn = new Float64Array(0);

  constructor(
    candidates: readonly Candidate[],
    readonly periodMs: number,
  ) {
    this.candidates = candidates.map((candidate) => ({
      candidate,
      scratch: newStepScratch(),
      held: [],
      refused: 0,
      usersAffected: 0,
      userPeriodsAffected: 0,
    }));
    this.timeline = new Timeline(
      candidates.length,
      timelineBucketMs(
        candidates.map((c) => c.windowMs),
        periodMs,
      ),
    );
    this.expiresAt = new Float64Array(INITIAL_IDENTITIES * candidates.length).fill(-Infinity);
    this.refusedIn = new Float64Array(INITIAL_IDENTITIES * candidates.length).fill(-1);
    this.flat = new Float64Array(INITIAL_IDENTITIES * candidates.length * FLAT);
    this.lengths = new Uint8Array(INITIAL_IDENTITIES * candidates.length);
  }

  /** One request by identity number `identity` (0, 1, 2, ... as first seen) at epoch ms `now`. */
  request(identity: number, now: number): void {
    this.requests++;
    if (now < this.firstTime) this.firstTime = now;
    if (now > this.lastTime) this.lastTime = now;
    const p = Math.floor(now / this.periodMs);
    if (identity >= this.count) this.grow(identity);
    let period = this.period[identity]!;
    if (p > period) {
      if (period >= 0) this.closePeriod(identity);
      this.period[identity] = period = p;
      this.inPeriod[identity] = 1;
    } else {
      this.inPeriod[identity]!++;
    }
    const slot = this.timeline.slot(now);
    const candidates = this.candidates;
    const n = candidates.length;
    const states = this.states;
    const expiresAt = this.expiresAt;
    const flat = this.flat;
    const lengths = this.lengths;
    for (let k = 0, at = identity * n; k < n; k++, at++) {
      const c = candidates[k]!;
      let held: State | undefined;
      if (expiresAt[at]! > now) {
        const length = lengths[at]!;
        if (length === SPILLED) held = states[at];
        else {
          const h = c.held;
          if (h.length !== length) h.length = length;
          for (let i = 0, f = at * FLAT; i < length; i++, f++) h[i] = flat[f]!;
          held = h;
        }
      }
      const scratch = c.scratch;
      stepRuleInto(c.candidate.rule, held, now, 1, 'consume', scratch);
      if (scratch.allowed) {
        if (scratch.ttlMs > 0) {
          const next = scratch.next;
          const length = next.length;
          if (length <= FLAT) {
            for (let i = 0, f = at * FLAT; i < length; i++, f++) flat[f] = next[i]!;
            lengths[at] = length;
          } else {
            let own = states[at];
            if (own === undefined) states[at] = own = next.slice();
            else {
              if (own.length !== length) own.length = length;
              for (let i = 0; i < length; i++) own[i] = next[i]!;
            }
            lengths[at] = SPILLED;
          }
          expiresAt[at] = now + scratch.ttlMs;
        } else {
          expiresAt[at] = -Infinity;
        }
        continue;
      }
      c.refused++;
      slot[k + 1]!++;
      const last = this.refusedIn[at]!;
      if (last !== period) {
        if (last === -1) c.usersAffected++;
        c.userPeriodsAffected++;
        this.refusedIn[at] = period;
      }
    }
    slot[0]!++;
  }

  /** Closes every open period; call once, after the last request. */
  finish(): void {
    for (let i = 0; i < this.count; i++) if (this.period[i]! >= 0) this.closePeriod(i);
  }

  get identities(): number {
    return this.count;
  }

  /** Each identity's largest count in one period. */
  peaks(): Histogram {
    const h = new Histogram();
    for (let i = 0; i < this.count; i++) if (this.peak[i]! > 0) h.add(this.peak[i]!);
    return h;
  }

  /** The `n` identities with the highest peaks, highest first. */
  busiest(n: number): Array<{ identity: number; peak: number }> {
    const top: Array<{ identity: number; peak: number }> = [];
    for (let i = 0; i < this.count; i++) {
      const peak = this.peak[i]!;
      if (top.length === n && peak <= top[n - 1]!.peak) continue;
      top.push({ identity: i, peak });
      top.sort((a, b) => b.peak - a.peak);
      if (top.length > n) top.pop();
    }
    return top;
  }

  outcomes(): CandidateOutcome[] {
    return this.candidates.map((c) => ({
      label: c.candidate.label,
      algorithm: c.candidate.algorithm,
      limit: c.candidate.limit,
      windowMs: c.candidate.windowMs,
      requestsRefused: c.refused,
      usersAffected: c.usersAffected,
      userPeriodsAffected: c.userPeriodsAffected,
    }));
  }

  private closePeriod(identity: number): void {
    const n = this.inPeriod[identity]!;
    this.userPeriods.add(n);
    if (n > this.peak[identity]!) this.peak[identity] = n;
    this.inPeriod[identity] = 0;
    this.period[identity] = -1;
  }

  /** Makes room for identities up to `identity` (numbers come densely, so usually one more), doubling the arrays. */
  private grow(identity: number): void {
    this.count = identity + 1;
    if (this.count <= this.period.length) return;
    let capacity = this.period.length;
    while (capacity < this.count) capacity *= 2;
    const n = this.candidates.length;
    this.period = extend(this.period, capacity, -1);
    this.inPeriod = extend(this.inPeriod, capacity, 0);
    this.peak = extend(this.peak, capacity, 0);
    this.expiresAt = extend(this.expiresAt, capacity * n, -Infinity);
    this.refusedIn = extend(this.refusedIn, capacity * n, -1);
    const flat = new Float64Array(capacity * n * FLAT);
    flat.set(this.flat);
    this.flat = flat;
    const lengths = new Uint8Array(capacity * n);
    lengths.set(this.lengths);
    this.lengths = lengths;
  }
}

function extend(array: Float64Array, length: number, fill: number): Float64Array<ArrayBuffer> {
  const longer = new Float64Array(length);
  longer.set(array);
  if (fill !== 0) longer.fill(fill, array.length);
  return longer;
}
