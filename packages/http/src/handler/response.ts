import type { Decision } from '@sluice/core';
import { leastRoom, reportableResults } from './decision.js';
import type { CompiledOptions, HandleResult, LimiterResult } from './types.js';
import { ceilSeconds, rateLimitFields, type CachedFieldsOptions, type HeaderField } from '../shared/header-fields.js';
import type { RefusalContext } from './options.js';
import { PROBLEM_CONTENT_TYPE, REFUSAL_STATUS, problemFor, type RefusalKind } from './problem.js';
import { limited } from './report.js';

/** What the consulted limiters said about one request: the response is shaped from it. */
export interface Tally {
  /** Every limiter consulted, in order; a refusing one is the last. */
  readonly results: readonly LimiterResult[];
  readonly identity: string | undefined;
  /** Some store failed and its failure policy answered. */
  readonly degraded: boolean;
  /** Some limiter would have refused, and shadow mode let the request through. */
  readonly shadowed: boolean;
}

/** A refusal before any limiter was consulted (no identity), or by the one at the end of `results`. */
export interface Refusal {
  readonly kind: RefusalKind;
  /** The refusing decision; none for `unidentified`. */
  readonly decision?: Decision | undefined;
  /** The refusing limiter's name and the cost it was asked for. */
  readonly about?: { readonly name: string; readonly cost: number } | undefined;
  /** RateLimit fields to send with the refusal. */
  readonly rateHeaders: readonly HeaderField[];
  readonly identity?: string | undefined;
  readonly degraded: boolean;
  /** Why, in words, for the problem's detail (`unidentified`: what identity was missing). */
  readonly reason?: string | undefined;
  readonly results: readonly LimiterResult[];
}

const NONE: readonly never[] = Object.freeze([]);

/** Let through without a decision: `skip` said so, or no identity under `onMissingIdentity: 'skip'`. */
export function skipped(identity: string | undefined): HandleResult {
  return {
    allowed: true,
    outcome: 'skipped',
    status: 200,
    headers: NONE,
    body: undefined,
    decision: undefined,
    results: NONE,
    identity,
    degraded: false,
  };
}

/** Every consulted limiter let the request through (or only shadow mode did): 200 with their RateLimit fields. */
export function allowedResult<R>(o: CompiledOptions<R>, tally: Tally): HandleResult {
  const { results } = tally;
  if (results.length === 0) return skipped(tally.identity);
  const decider = leastRoom(results);
  return {
    allowed: true,
    outcome: tally.shadowed ? 'shadow' : 'allowed',
    status: 200,
    headers: rateLimitFields(reportableResults(results), decider, o),
    body: undefined,
    decision: results[decider]!.decision,
    results,
    identity: tally.identity,
    degraded: tally.degraded,
  };
}

/** The last of `tally.results` refused: a shadow ban, or a refusal with its status, problem and Retry-After. */
export function refusedResult<R>(o: CompiledOptions<R>, raw: R, tally: Tally): HandleResult {
  const { results, identity, degraded } = tally;
  const refused = results.length - 1;
  const { decision, kind: entryKind, name, cost, identity: key } = results[refused]!;
  const kind: RefusalKind =
    decision.reason === 'store_unavailable'
      ? 'store_unavailable'
      : decision.reason === 'cost_exceeds_limit'
        ? 'cost_exceeds_limit'
        : entryKind === 'shed'
          ? 'shed'
          : 'limited';
  const ban = o.shadowBan;
  if (kind === 'limited' && ban !== undefined && (ban.when === undefined || ban.when(raw, decision))) {
    limited(o, { request: raw, identity: key, limiterName: name, decision, shadow: false, shadowBanned: true });
    // The same fields an allowed response carries (and no Retry-After): a ban the client can tell apart by its
    // header names is no shadow ban.
    const headers = rateLimitFields(reportableResults(results), refused, o);
    return {
      allowed: false,
      outcome: 'shadow_banned',
      status: ban.status,
      headers: [...headers, { name: 'Content-Type', value: ban.contentType, merge: 'set' }],
      body: ban.body,
      decision,
      results,
      identity,
      degraded,
    };
  }
  limited(o, { request: raw, identity: key, limiterName: name, decision, shadow: false, shadowBanned: false });
  const capped: CachedFieldsOptions = {
    styles: o.styles,
    legacyReset: o.legacyReset,
    maxWindowSeconds: retryAfterSeconds(REFUSAL_STATUS[kind], decision),
    policyItems: o.policyItems,
  };
  const rateHeaders = rateLimitFields(reportableResults(results), refused, capped);
  return refusal(o, raw, { kind, decision, about: { name, cost }, rateHeaders, identity, degraded, results });
}

/** Whole seconds for Retry-After on a 429 or 503 (at least 1), none on other refusals. */
function retryAfterSeconds(status: number, decision: Decision | undefined): number | undefined {
  if (status !== 429 && status !== 503) return undefined;
  return Math.max(1, ceilSeconds(decision !== undefined && Number.isFinite(decision.retryAfter) ? decision.retryAfter : 1000));
}

/** The refusal response: problem+json (or refusalResponse's), its status, Retry-After and Content-Type. */
export function refusal<R>(o: CompiledOptions<R>, raw: R, refused: Refusal): HandleResult {
  const { kind, decision, about } = refused;
  const status = REFUSAL_STATUS[kind];
  const retryAfter = retryAfterSeconds(status, decision);
  const rule = decision?.rules.find((r) => r.id === decision.rule);
  // Name the violated policy exactly as its RateLimit item is named: `name/ruleId` for a compound limiter.
  const compound = decision !== undefined && decision.rules.length > 1;
  const problem = problemFor({
    kind,
    policy: about === undefined ? undefined : compound ? `${about.name}/${decision.rule}` : about.name,
    limit: decision?.limit,
    windowMs: rule?.windowMs,
    cost: about?.cost,
    retryAfterSeconds: retryAfter,
    reason: refused.reason,
  });
  let body = JSON.stringify(problem);
  let contentType = PROBLEM_CONTENT_TYPE;
  let finalStatus = status;
  const headers: HeaderField[] = [...refused.rateHeaders];
  if (retryAfter !== undefined) headers.push({ name: 'Retry-After', value: String(retryAfter), merge: 'max' });
  if (o.refusalResponse !== undefined) {
    const context: RefusalContext<R> = { request: raw, kind, status, problem, retryAfterSeconds: retryAfter, decision };
    const custom = o.refusalResponse(context);
    if (custom !== undefined) {
      if (custom.status !== undefined) finalStatus = custom.status;
      if (custom.body !== undefined) body = custom.body;
      if (custom.contentType !== undefined) contentType = custom.contentType;
      for (const [name, value] of Object.entries(custom.headers ?? {})) headers.push({ name, value, merge: 'set' });
    }
  }
  headers.push({ name: 'Content-Type', value: contentType, merge: 'set' });
  return {
    allowed: false,
    outcome: kind,
    status: finalStatus,
    headers,
    body,
    decision,
    results: refused.results,
    identity: refused.identity,
    degraded: refused.degraded,
  };
}
