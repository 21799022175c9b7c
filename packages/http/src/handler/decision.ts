import { isSluiceError, type Decision } from '@sluice/core';
import type { CompiledEntry, CompiledOptions, LimiterResult } from './types.js';
import { limited, report } from './report.js';

/**
 * `limitSync` where the store allows it (learnt once per limiter), `limit` otherwise. The usual cost of 1 is
 * passed as no options at all: that is the call core's fast seam answers directly.
 */
export function consume<R>(entry: CompiledEntry<R>, key: string, cost: number): Decision | Promise<Decision> {
  const options = cost === 1 ? undefined : { cost };
  const limiter = entry.limiter as typeof entry.limiter & { limitSync?: (id: string, o?: { cost: number }) => Decision };
  if (entry.sync !== false && typeof limiter.limitSync === 'function') {
    try {
      const decision = limiter.limitSync(key, options);
      entry.sync = true;
      return decision;
    } catch (error) {
      if (!isSluiceError(error) || error.code !== 'UNSUPPORTED_OPERATION') throw error;
      // An asynchronous store (or a synchronous one falling back to an asynchronous store): use limit().
      if (entry.sync === undefined) entry.sync = false;
    }
  }
  return entry.limiter.limit(key, options);
}

/** Gives back what an earlier limiter took when a later one refused: synchronously where `limitSync` worked. */
export function giveBack<R>(entry: CompiledEntry<R>, key: string, cost: number): Decision | Promise<Decision> {
  const limiter = entry.limiter as typeof entry.limiter & { refundSync?: (id: string, o: { cost: number }) => Decision };
  if (entry.sync === true && typeof limiter.refundSync === 'function') return limiter.refundSync(key, { cost });
  return entry.limiter.refund(key, { cost });
}

/** Bits of `reportVerdict`'s answer. */
export const DEGRADED = 1;
export const SHADOWED = 2;
export const REFUSED = 4;

/**
 * Reports what one limiter's decision means (a degraded store to onError, a shadow would-be refusal to
 * onLimited) and answers, as DEGRADED | SHADOWED | REFUSED bits, whether it refuses the request.
 */
export function reportVerdict<R>(o: CompiledOptions<R>, raw: R, entry: CompiledEntry<R>, key: string, decision: Decision): number {
  let verdict = 0;
  if (decision.degraded) {
    verdict |= DEGRADED;
    report(o, decision.error, { request: raw, source: 'store', limiterName: entry.name, decision }, entry.store);
  }
  if (!decision.allowed || decision.reason === 'shadow') {
    if (decision.allowed || o.shadow) {
      limited(o, { request: raw, identity: key, limiterName: entry.name, decision, shadow: true, shadowBanned: false });
      return verdict | SHADOWED;
    }
    return verdict | REFUSED;
  }
  return verdict;
}

/**
 * Results as header reports. A failure-policy answer (reason `store_unavailable`) has no counts behind it, so it
 * reports no rules rather than an invented "full" or "empty"; a fallback store's answer has real counts and stays.
 */
export function reportableResults(results: readonly LimiterResult[]): readonly LimiterResult[] {
  let failed = false;
  for (let i = 0; i < results.length; i++) if (results[i]!.decision.reason === 'store_unavailable') failed = true;
  if (!failed) return results;
  return results.map((r) => (r.decision.reason === 'store_unavailable' ? { ...r, decision: { ...r.decision, rules: [] } } : r));
}

/** Index of the result with the least room left (the first among equals), for single-policy header forms. */
export function leastRoom(results: readonly LimiterResult[]): number {
  let best = 0;
  for (let i = 1; i < results.length; i++) {
    if (results[i]!.decision.remaining < results[best]!.decision.remaining) best = i;
  }
  return best;
}
