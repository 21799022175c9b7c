/**
 * Replays requests through the candidate rules with core's own step (`stepRule` from @sluice/core/store), one
 * independent state per identity and candidate, exactly as the memory store keeps it: a consumed request writes
 * the step's next state with its time to live, a refusal writes nothing, a state read at or after its expiry is
 * no state, and a state worth nothing (ttl <= 0) is dropped. Each request costs 1.
 *
 * Alongside, it measures the traffic itself as seed 003 does: requests per identity per period (a "user-period"),
 * and each identity's peak over its periods. A clock that steps back into an earlier period counts in the current
 * one: a period only moves forward, so a user-period is never counted twice.
 *
 * Memory: a few numbers per identity and candidate, plus the distinct counts; nothing per line.
 */
import type { State } from '@sluice/core/store';
import { stepRule } from '@sluice/core/store';
import type { Candidate } from './candidates.js';
import { Histogram } from './histogram.js';
import { Timeline } from './timeline.js';

export interface CandidateOutcome {
  readonly label: string;
  readonly algorithm: string;
  readonly limit: number;
  readonly windowMs: number;
  readonly requestsRefused: number;
  readonly usersAffected: number;
  readonly userPeriodsAffected: number;
}

class CandidateState {
  readonly states: Array<State | undefined> = [];
  readonly expiresAt: number[] = [];
  /** Period of the identity's last refusal, -1 before its first: counts users and user-periods affected once each. */
  readonly refusedIn: number[] = [];
  refused = 0;
  usersAffected = 0;
  userPeriodsAffected = 0;
  constructor(readonly candidate: Candidate) {}
}

export class Replay {
  requests = 0;
  firstTime = Infinity;
  lastTime = -Infinity;
  readonly userPeriods = new Histogram();
  readonly timeline: Timeline;
  private readonly candidates: CandidateState[];
  private readonly period: number[] = [];
  private readonly inPeriod: number[] = [];
  private readonly peak: number[] = [];

  constructor(
    candidates: readonly Candidate[],
    readonly periodMs: number,
  ) {
    this.candidates = candidates.map((c) => new CandidateState(c));
    this.timeline = new Timeline(candidates.length);
  }

  /** One request by identity number `identity` (0, 1, 2, ... as first seen) at epoch ms `now`. */
  request(identity: number, now: number): void {
    this.requests++;
    if (now < this.firstTime) this.firstTime = now;
    if (now > this.lastTime) this.lastTime = now;
    const p = Math.floor(now / this.periodMs);
    if (identity >= this.period.length) this.grow(identity);
    let period = this.period[identity]!;
    if (p > period) {
      if (period >= 0) this.closePeriod(identity);
      this.period[identity] = period = p;
      this.inPeriod[identity] = 1;
    } else {
      this.inPeriod[identity]!++;
    }
    const slot = this.timeline.slot(now);
    for (let k = 0; k < this.candidates.length; k++) {
      const c = this.candidates[k]!;
      const held = c.states[identity];
      const state = held !== undefined && c.expiresAt[identity]! > now ? held : undefined;
      const step = stepRule(c.candidate.rule, state, now, 1, 'consume');
      if (step.allowed) {
        if (step.ttlMs > 0) {
          c.states[identity] = step.next;
          c.expiresAt[identity] = now + step.ttlMs;
        } else {
          c.states[identity] = undefined;
        }
        continue;
      }
      c.refused++;
      slot[k + 1]!++;
      const last = c.refusedIn[identity]!;
      if (last !== period) {
        if (last === -1) c.usersAffected++;
        c.userPeriodsAffected++;
        c.refusedIn[identity] = period;
      }
    }
    slot[0]!++;
  }

  /** Closes every open period; call once, after the last request. */
  finish(): void {
    for (let i = 0; i < this.period.length; i++) if (this.period[i]! >= 0) this.closePeriod(i);
  }

  get identities(): number {
    return this.period.length;
  }

  /** Each identity's largest count in one period. */
  peaks(): Histogram {
    const h = new Histogram();
    for (const p of this.peak) if (p > 0) h.add(p);
    return h;
  }

  /** The `n` identities with the highest peaks, highest first. */
  busiest(n: number): Array<{ identity: number; peak: number }> {
    const top: Array<{ identity: number; peak: number }> = [];
    for (let i = 0; i < this.peak.length; i++) {
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

  private grow(identity: number): void {
    while (this.period.length <= identity) {
      this.period.push(-1);
      this.inPeriod.push(0);
      this.peak.push(0);
      for (const c of this.candidates) {
        c.states.push(undefined);
        c.expiresAt.push(0);
        c.refusedIn.push(-1);
      }
    }
  }
}
