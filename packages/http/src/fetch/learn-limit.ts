/**
 * Following a third party's limit (outbound calls, as in the article 'Rate limiting with Redis'): the throttled
 * fetch's rules start as the user wrote them and move with what the third party says. A stated limit
 * (`RateLimit-Policy`, `RateLimit`, `RateLimit-Limit`, `X-RateLimit-Limit`) sets the matching rule to it, never
 * above the rule the user wrote; a 429 or 503 that states no limit cuts the rules by a quarter (at most once per
 * window, and only for a request sent after the last cut) and, after ten quiet windows, gives back a tenth of the
 * written limit per window (additive increase, multiplicative decrease, as TCP does, since a bare 429 says "too
 * many" but not how many).
 *
 * Rules keep their ids, so the shared state is kept (GCRA rescales its stored remainder to the new limit).
 * Learning scales GCRA and the window algorithms; token and leaky buckets keep the limit they were written with.
 */
import { fixedWindow, gcra, slidingWindowCounter, slidingWindowLog, type Rule } from '@sluice/core';
import { fieldMembers } from '../shared/header-fields.js';
import { matchesStatedWindow } from './third-party-limit.js';
import type { ResponseLike } from './types.js';

/** A limit a third party states: `limit` per `windowMs`, or per an unstated window. */
export interface StatedLimit {
  readonly limit: number;
  readonly windowMs?: number;
}

/** How much a bare 429 cuts the learned limits by (they become 3/4). */
export const CUT_FACTOR = 0.75;
/** Quiet windows after the last refusal before the learned limits start to climb back. */
export const QUIET_WINDOWS = 10;
/** Each window after that gives back this share of the written limit. */
export const RAISE_SHARE = 0.1;

/**
 * The limits a response states, from (in order, first found wins) `RateLimit-Policy` (`10;w=1, 1000;w=86400` and
 * `"default";q=10;w=1`), `RateLimit` (`limit=10, remaining=3, reset=5`), `RateLimit-Limit` and `X-RateLimit-Limit`
 * (a leading whole number; a policy after it, `10, 10;w=1`, is read as the policy header is). Empty when none.
 */
export function statedLimits(response: ResponseLike): StatedLimit[] {
  const headers = response.headers;
  const policy = headers.get('ratelimit-policy');
  if (policy !== null) {
    const found = policyItems(policy);
    if (found.length > 0) return found;
  }
  const dictionary = headers.get('ratelimit');
  if (dictionary !== null) {
    for (const { key, value } of fieldMembers(dictionary)) {
      if (key === 'limit' && /^\d+$/.test(value) && Number(value) > 0) return [{ limit: Number(value) }];
    }
  }
  for (const name of ['ratelimit-limit', 'x-ratelimit-limit']) {
    const value = headers.get(name);
    if (value === null) continue;
    const withPolicy = policyItems(value).filter((item) => item.windowMs !== undefined);
    if (withPolicy.length > 0) return withPolicy;
    const lead = /^\s*(\d+)/.exec(value);
    if (lead !== null && Number(lead[1]) > 0 && Number.isSafeInteger(Number(lead[1]))) return [{ limit: Number(lead[1]) }];
  }
  return [];
}

/** Items of a policy list: `10;w=1` or `"name";q=10;w=1`; items without a positive whole quota are skipped. */
function policyItems(value: string): StatedLimit[] {
  const items: StatedLimit[] = [];
  for (const { key, value: head, params } of fieldMembers(value)) {
    if (key !== undefined) continue;
    const quota = params.get('q');
    const window = params.get('w');
    const limit = quota !== undefined && /^\d+$/.test(quota) ? Number(quota) : /^\d+$/.test(head) ? Number(head) : undefined;
    const windowMs = window !== undefined && /^\d+$/.test(window) ? Number(window) * 1000 : undefined;
    if (limit !== undefined && limit > 0 && Number.isSafeInteger(limit))
      items.push(windowMs !== undefined && windowMs > 0 ? { limit, windowMs } : { limit });
  }
  return items;
}

/** The window a rule's limit is counted over, for matching a stated window; undefined when learning leaves it. */
export function learnableWindow(rule: Rule): number | undefined {
  switch (rule.algorithm) {
    case 'gcra':
      return rule.params.periodMs;
    case 'fixed-window':
    case 'sliding-window-counter':
    case 'sliding-window-log':
      return rule.params.windowMs;
    default:
      return undefined;
  }
}

/** The written limit per window of a learnable rule (GCRA: its rate's limit, not its burst). */
export function writtenLimit(rule: Rule): number {
  return rule.algorithm === 'gcra' ? rule.params.limit : rule.limit;
}

/** `rule` with `limit` per its window, same id (state kept); GCRA's burst is capped at the new limit. */
export function withLimit(rule: Rule, limit: number): Rule {
  switch (rule.algorithm) {
    case 'gcra':
      return gcra({ id: rule.id, limit, period: rule.params.periodMs, burst: Math.min(rule.params.burst, limit) });
    case 'fixed-window': {
      const scaled = fixedWindow({ id: rule.id, limit, window: rule.params.windowMs, stagger: rule.stagger });
      return { ...scaled, algorithm: 'fixed-window', params: { limit, windowMs: rule.params.windowMs, offsetMs: rule.params.offsetMs } };
    }
    case 'sliding-window-counter':
      return slidingWindowCounter({ id: rule.id, limit, window: rule.params.windowMs });
    case 'sliding-window-log':
      return slidingWindowLog({ id: rule.id, limit, window: rule.params.windowMs });
    default:
      return rule;
  }
}

/**
 * Each stated limit sets the rules of its window (or, unstated, the shortest learnable one), capped at what was
 * written. A thirdPartyLimit rule's window is the stated one plus its margin, and matches it.
 */
export function followStated(written: readonly Rule[], stated: readonly StatedLimit[], current: readonly number[]): number[] {
  const next = [...current];
  const shortest = shortestWindow(written);
  for (const { limit, windowMs } of stated) {
    written.forEach((rule, i) => {
      const matches = matchesStatedWindow(learnableWindow(rule), windowMs ?? shortest);
      if (matches) next[i] = Math.min(writtenLimit(rule), limit);
    });
  }
  return next;
}

/** The shortest window among the learnable rules (Infinity when none is learnable). */
export function shortestWindow(rules: readonly Rule[]): number {
  let shortest = Infinity;
  for (const rule of rules) shortest = Math.min(shortest, learnableWindow(rule) ?? Infinity);
  return shortest;
}

/** The written rules with `limits` (by index) in force; a rule at its written limit is the written rule itself. */
export function rulesWithLimits(written: readonly Rule[], limits: readonly number[]): Rule[] {
  return written.map((rule, i) => (limits[i] === writtenLimit(rule) ? rule : withLimit(rule, limits[i]!)));
}

/** The learnable limits times `factor`, rounded down, at least 1; the others as they are. */
export function cutLimits(written: readonly Rule[], current: readonly number[], factor: number): number[] {
  return current.map((limit, i) => (learnableWindow(written[i]!) === undefined ? limit : Math.max(1, Math.floor(limit * factor))));
}

/** Each limit up by a tenth of its written limit (at least 1), never above the written limit. */
export function raiseLimits(written: readonly Rule[], current: readonly number[]): number[] {
  return current.map((limit, i) =>
    Math.min(writtenLimit(written[i]!), limit + Math.max(1, Math.floor(writtenLimit(written[i]!) * RAISE_SHARE))),
  );
}

/**
 * One process's view of a third party's limit, applied to a limiter's rules through `apply` (the throttled fetch
 * passes `limiter.configure`). `current` is the limit per rule now in force, by index of the written rules.
 */
export class LimitLearner {
  private readonly written: readonly Rule[];
  private readonly current: number[];
  private lastCut = -Infinity;
  private lastRefusal = -Infinity;
  private lastRaise = -Infinity;

  constructor(
    rules: readonly Rule[],
    private readonly apply: (rules: readonly Rule[]) => void,
  ) {
    this.written = rules;
    this.current = rules.map(writtenLimit);
  }

  /** The limits now in force, by rule index (for tests and logs). */
  get limits(): readonly number[] {
    return this.current;
  }

  /** Reads one answer: the request was sent at `sentAt`, the answer read at `now` (epoch ms). */
  observe(response: ResponseLike, sentAt: number, now: number): void {
    const stated = statedLimits(response);
    const refused = response.status === 429 || response.status === 503;
    let next = [...this.current];
    if (stated.length > 0) {
      next = followStated(this.written, stated, next);
    } else if (refused && sentAt >= this.lastCut && now - this.lastCut >= shortestWindow(this.written)) {
      next = cutLimits(this.written, next, CUT_FACTOR);
      this.lastCut = now;
    } else if (
      !refused &&
      now - this.lastRefusal >= QUIET_WINDOWS * shortestWindow(this.written) &&
      now - this.lastRaise >= shortestWindow(this.written)
    ) {
      next = raiseLimits(this.written, next);
      this.lastRaise = now;
    }
    if (refused) this.lastRefusal = now;
    this.set(next);
  }

  private set(next: readonly number[]): void {
    if (next.every((limit, i) => limit === this.current[i])) return;
    next.forEach((limit, i) => (this.current[i] = limit));
    this.apply(rulesWithLimits(this.written, this.current));
  }
}
