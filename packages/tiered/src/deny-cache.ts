/**
 * The deny cache: a refusal the remote store gave, remembered per identity and replayed from memory until the time
 * the store said the same cost could pass. Every strategy has it; for `deny-cache` it is the whole strategy.
 */
import { NEVER, type LimitRequest, type LimitResult, type MemoryAnswer, type RuleOutcome } from '@sluice/core/store';
import type { Denial, Entry, TierStats } from './entry.js';

/** How long a cost that can never fit is refused locally (it can only start fitting if the rules change). */
const NEVER_DENIAL_MS = 1000;

/** Remembers a refusal until the time the remote store said the same cost could pass. */
export function remember(entry: Entry, cost: number, result: LimitResult): void {
  let until = Number.NEGATIVE_INFINITY;
  for (const o of result.outcomes) {
    if (o.allowed) continue;
    const retry = o.retryAt === NEVER ? result.now + NEVER_DENIAL_MS : o.retryAt;
    if (retry > until) until = retry;
  }
  if (until <= result.now) return;
  const outcomes = result.outcomes.map(withoutModeFields);
  entry.denial = { cost, mixed: outcomes.some((o) => o.allowed), at: result.now, until, outcomes };
}

/** A remembered refusal that covers this request, replayed as the remote store gave it (`offset`: the remote clock's lead). */
export function denied(entry: Entry, request: LimitRequest, offset: number, counters: TierStats): LimitResult | undefined {
  const now = request.now + offset;
  const denial = covering(entry, request, now, counters);
  if (denial === undefined) return undefined;
  // A rule that had room in a compound refusal says "now" for its retry time, as a fresh answer would.
  return { now, outcomes: denial.mixed ? denial.outcomes.map((o) => (o.allowed ? { ...o, retryAt: now } : o)) : denial.outcomes };
}

/** `denied` for a single-rule request (core's memory path), written into `out`: false when no refusal covers it. */
export function deniedInto(entry: Entry, request: LimitRequest, offset: number, counters: TierStats, out: MemoryAnswer): boolean {
  const now = request.now + offset;
  const denial = entry.denial?.outcomes.length === 1 ? covering(entry, request, now, counters) : undefined;
  if (denial === undefined) return false;
  const outcome = denial.outcomes[0]!;
  out.allowed = outcome.allowed;
  out.remaining = outcome.remaining;
  out.resetAt = outcome.resetAt;
  out.retryAt = outcome.retryAt;
  out.now = now;
  return true;
}

/** The remembered refusal, counted as replayed, if it covers this request at `now` (remote clock); one that no longer holds is forgotten. */
function covering(entry: Entry, request: LimitRequest, now: number, counters: TierStats): Denial | undefined {
  const denial = entry.denial;
  if (denial === undefined) return undefined;
  if (now >= denial.until || now < denial.at) {
    entry.denial = undefined;
    return undefined;
  }
  // Only the same cost: a larger one can have a later retryAt, or never fit at all (cost_exceeds_limit).
  if (request.cost !== denial.cost) return undefined;
  counters.local++;
  counters.denyCacheHits++;
  return denial;
}

/** A take's outcome as a consume's: `granted` belongs to the take the tier made, not to the caller's request. */
export function withoutModeFields(outcome: RuleOutcome): RuleOutcome {
  if (outcome.granted === undefined && outcome.startAt === undefined) return outcome;
  return {
    id: outcome.id,
    allowed: outcome.allowed,
    limit: outcome.limit,
    remaining: outcome.remaining,
    resetAt: outcome.resetAt,
    retryAt: outcome.retryAt,
  };
}
