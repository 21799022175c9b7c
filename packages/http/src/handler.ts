import { SluiceError, isSluiceError, type Decision } from '@sluice/core';
import { compileOptions, type CompiledEntry, type CompiledOptions } from './compile-options.js';
import { describe } from './describe.js';
import { ceilSeconds, rateLimitFields, type HeaderField } from './header-fields.js';
import { drive } from './maybe-async.js';
import type { DenyContext, ErrorEvent, HttpLimitOptions, IdentityValue } from './options.js';
import { PROBLEM_CONTENT_TYPE, REFUSAL_STATUS, problemFor, type RefusalKind } from './problem.js';
import type { HttpRequest } from './request.js';

/**
 * What happened to the request:
 * - `allowed`: every limiter had room. `skipped`: `skip` said so, or no identity under `onMissingIdentity: 'skip'`.
 * - `shadow`: a limiter would have refused, but shadow mode let it through.
 * - `shadow_banned`: refused, and answered with the shadow-ban response.
 * - a refusal: `limited` (429), `shed` (503), `cost_exceeds_limit` (413), `store_unavailable` (503, the store
 *   failed and the limiter fails closed), `unidentified` (400, no identity under `onMissingIdentity: 'deny'`).
 */
export type Outcome = 'allowed' | 'skipped' | 'shadow' | 'shadow_banned' | RefusalKind;

/** One limiter's part in the answer. */
export interface LimiterResult {
  readonly policy: string;
  readonly kind: 'limit' | 'shed';
  readonly identity: string;
  readonly cost: number;
  readonly decision: Decision;
}

export interface HandleResult {
  /** True: run the route. False: answer with `status`, `headers` and `body` instead. */
  readonly allowed: boolean;
  readonly outcome: Outcome;
  /** 200 when allowed; the refusal's status otherwise. */
  readonly status: number;
  /** Write these on the response in both cases (see `writeHeaders`). */
  readonly headers: readonly HeaderField[];
  /** The refusal body (problem+json, or the shadow-ban body). */
  readonly body: string | undefined;
  /** The decision that speaks for the request: the refusing one, else the one with least room left. */
  readonly decision: Decision | undefined;
  /** Every limiter that was consulted, in order. Limiters after a refusal are not consulted. */
  readonly results: readonly LimiterResult[];
  /** The shared identity (`user:…`, `ip:…`, `bucket:…`), when one was resolved. */
  readonly identity: string | undefined;
  /** A store failed for at least one limiter and its failure policy answered (see onError). */
  readonly degraded: boolean;
}

export interface Handler<R> {
  /** Decides one request. Always a promise; hook errors reject it. */
  handle(request: HttpRequest, raw?: R): Promise<HandleResult>;
  /**
   * The same, without a promise when nothing needed one (synchronous store, synchronous hooks). May throw
   * synchronously. For adapters, where the allocation shows up in throughput.
   */
  run(request: HttpRequest, raw?: R): HandleResult | Promise<HandleResult>;
}

/**
 * Builds the framework-agnostic request handler that every adapter wraps. Options are validated here, once.
 * @example
 * const handler = createHandler({ limiter, identify: (req) => req.user?.id });
 * const result = await handler.handle({ headers: request.headers, remoteAddress }, request);
 * if (!result.allowed) return new Response(result.body, { status: result.status });
 */
export function createHandler<R = HttpRequest>(options: HttpLimitOptions<R>): Handler<R> {
  const compiled = compileOptions(options);
  const warn = warner();
  // Without a framework request, hooks receive the HttpRequest itself.
  const run = (request: HttpRequest, raw?: R) => drive(flow(compiled, request, (raw === undefined ? request : raw) as R, warn));
  return {
    run,
    handle(request, raw) {
      try {
        return Promise.resolve(run(request, raw));
      } catch (error) {
        return Promise.reject(error);
      }
    },
  };
}

const UNRESOLVED: unique symbol = Symbol('unresolved');

function* flow<R>(o: CompiledOptions<R>, request: HttpRequest, raw: R, warn: Warner): Generator<unknown, HandleResult, unknown> {
  if (o.skip !== undefined && (yield o.skip(raw)) === true) return passThrough('skipped', [], undefined, false);

  const needsShared = o.entries.some((e) => e.kind === 'limit');
  let shared: string | { problem: string } | typeof UNRESOLVED = UNRESOLVED;
  if (needsShared) {
    shared = (yield* resolveShared(o, request, raw)) as string | { problem: string };
    if (typeof shared !== 'string' && o.missing === 'deny') return refusal(o, raw, 'unidentified', undefined, undefined, [], undefined, false, shared.problem);
  }
  const identity = typeof shared === 'string' ? shared : undefined;

  const results: LimiterResult[] = [];
  const consulted: CompiledEntry<R>[] = [];
  let sharedCost: number | undefined;
  let refused: number | undefined;
  let degraded = false;
  let shadowed = false;
  for (const entry of o.entries) {
    let key: string | undefined;
    if (entry.identify !== undefined) {
      const own = identityText((yield entry.identify(raw)) as IdentityValue, 'identify');
      if (own !== undefined) key = `key:${own}`;
    }
    key ??= entry.kind === 'shed' ? 'server' : identity;
    if (key === undefined) continue; // no identity under onMissingIdentity: 'skip'

    let cost: number;
    if (entry.cost !== undefined) {
      cost = (typeof entry.cost === 'function' ? yield entry.cost(raw) : entry.cost) as number;
    } else {
      sharedCost ??= (typeof o.cost === 'function' ? yield o.cost(raw) : o.cost) as number;
      cost = sharedCost;
    }
    const decision = (yield* consume(entry, key, cost)) as Decision;
    results.push({ policy: entry.policy, kind: entry.kind, identity: key, cost, decision });
    consulted.push(entry);
    if (decision.degraded) {
      degraded = true;
      report(o, warn, decision.error, { request: raw, source: 'store', policy: entry.policy, decision });
    }
    const wouldRefuse = !decision.allowed || decision.reason === 'shadow';
    if (wouldRefuse && (decision.allowed || o.shadow)) {
      shadowed = true;
      limited(o, warn, raw, key, entry.policy, decision, true, false);
      continue;
    }
    if (!decision.allowed) {
      refused = results.length - 1;
      break;
    }
  }

  if (refused === undefined) {
    if (results.length === 0) return passThrough('skipped', [], identity, false);
    const decider = leastRoom(results);
    const headers = rateLimitFields(counted(results), decider, o.styles, o.legacyReset);
    return passThrough(shadowed ? 'shadow' : 'allowed', headers, identity, degraded, results, results[decider]!.decision);
  }

  // All or nothing across limiters, as within one: give back what the earlier ones took.
  for (let i = 0; i < refused; i++) {
    const earlier = results[i]!;
    if (!earlier.decision.allowed || earlier.decision.reason !== 'ok' || earlier.cost === 0) continue;
    try {
      const back = (yield* giveBack(consulted[i]!, earlier.identity, earlier.cost)) as Decision;
      if (!back.degraded) results[i] = { ...earlier, decision: { ...back, rule: earlier.decision.rule } };
    } catch (error) {
      report(o, warn, error, { request: raw, source: 'store', policy: earlier.policy });
    }
  }

  const { decision, kind: entryKind, policy, cost } = results[refused]!;
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
    limited(o, warn, raw, results[refused]!.identity, policy, decision, false, true);
    return {
      allowed: false,
      outcome: 'shadow_banned',
      status: ban.status,
      headers: [{ name: 'Content-Type', value: ban.contentType, merge: 'set' }],
      body: ban.body,
      decision,
      results,
      identity,
      degraded,
    };
  }
  limited(o, warn, raw, results[refused]!.identity, policy, decision, false, false);
  const headers = rateLimitFields(counted(results), refused, o.styles, o.legacyReset);
  return refusal(o, raw, kind, decision, { policy, cost }, headers, identity, degraded, undefined, results);
}

function* resolveShared<R>(o: CompiledOptions<R>, request: HttpRequest, raw: R): Generator<unknown, string | { problem: string }, unknown> {
  if (o.identify !== undefined) {
    const id = identityText((yield o.identify(raw)) as IdentityValue, 'identify');
    if (id !== undefined) return `user:${id}`;
  }
  let problem = 'there is no authenticated id and IP fallback is off (clientIp: false)';
  if (o.clientIp !== undefined) {
    const ip = (yield o.clientIp(request, raw)) as { ok: true; key: string } | { ok: false; problem: string };
    if (ip.ok) return `ip:${ip.key}`;
    problem = `there is no authenticated id and ${ip.problem}`;
  }
  if (o.missing !== 'deny' && o.missing !== 'skip') return o.missing;
  return { problem };
}

function identityText(value: IdentityValue, field: string): string | undefined {
  if (value === undefined || value === null || value === '') return undefined;
  if (typeof value === 'string') return value;
  if (typeof value === 'number' && Number.isFinite(value)) return String(value);
  throw new SluiceError('INVALID_IDENTITY', `${field} must return a string, a number, undefined or null, got ${describe(value)}`);
}

/** `limitSync` where the store allows it (learnt once per limiter), `limit` otherwise. */
function* consume<R>(entry: CompiledEntry<R>, key: string, cost: number): Generator<unknown, Decision, unknown> {
  const limiter = entry.limiter as typeof entry.limiter & { limitSync?: (id: string, o: { cost: number }) => Decision };
  if (entry.sync !== false && typeof limiter.limitSync === 'function') {
    try {
      const decision = limiter.limitSync(key, { cost });
      entry.sync = true;
      return decision;
    } catch (error) {
      if (!isSluiceError(error) || error.code !== 'UNSUPPORTED_OPERATION') throw error;
      // An asynchronous store (or a synchronous one falling back to an asynchronous store): use limit().
      if (entry.sync === undefined) entry.sync = false;
    }
  }
  return (yield entry.limiter.limit(key, { cost })) as Decision;
}

function* giveBack<R>(entry: CompiledEntry<R>, key: string, cost: number): Generator<unknown, Decision, unknown> {
  const limiter = entry.limiter as typeof entry.limiter & { refundSync?: (id: string, o: { cost: number }) => Decision };
  if (entry.sync === true && typeof limiter.refundSync === 'function') return limiter.refundSync(key, { cost });
  return (yield entry.limiter.refund(key, { cost })) as Decision;
}

/**
 * Results as header reports. A failure-policy answer (reason `store_unavailable`) has no counts behind it, so it
 * reports no rules rather than an invented "full" or "empty"; a fallback store's answer has real counts and stays.
 */
function counted(results: readonly LimiterResult[]): readonly LimiterResult[] {
  if (!results.some((r) => r.decision.reason === 'store_unavailable')) return results;
  return results.map((r) => (r.decision.reason === 'store_unavailable' ? { ...r, decision: { ...r.decision, rules: [] } } : r));
}

/** Index of the result with the least room left (the first among equals), for single-policy header forms. */
function leastRoom(results: readonly LimiterResult[]): number {
  let best = 0;
  for (let i = 1; i < results.length; i++) {
    if (results[i]!.decision.remaining < results[best]!.decision.remaining) best = i;
  }
  return best;
}

function passThrough(
  outcome: Outcome,
  headers: readonly HeaderField[],
  identity: string | undefined,
  degraded: boolean,
  results: readonly LimiterResult[] = [],
  decision?: Decision,
): HandleResult {
  return { allowed: true, outcome, status: 200, headers, body: undefined, decision, results, identity, degraded };
}

function refusal<R>(
  o: CompiledOptions<R>,
  raw: R,
  kind: RefusalKind,
  decision: Decision | undefined,
  about: { policy: string; cost: number } | undefined,
  rateHeaders: readonly HeaderField[],
  identity: string | undefined,
  degraded: boolean,
  reason?: string,
  results: readonly LimiterResult[] = [],
): HandleResult {
  const status = REFUSAL_STATUS[kind];
  const retryAfterSeconds =
    status === 429 || status === 503 ? Math.max(1, ceilSeconds(Number.isFinite(decision?.retryAfter) ? decision!.retryAfter : 1000)) : undefined;
  const rule = decision?.rules.find((r) => r.id === decision.rule);
  const problem = problemFor({
    kind,
    policy: about?.policy,
    limit: decision?.limit,
    windowMs: rule?.windowMs,
    cost: about?.cost,
    retryAfterSeconds,
    reason,
  });
  let body = JSON.stringify(problem);
  let contentType = PROBLEM_CONTENT_TYPE;
  let finalStatus = status;
  const headers: HeaderField[] = [...rateHeaders];
  if (retryAfterSeconds !== undefined) headers.push({ name: 'Retry-After', value: String(retryAfterSeconds), merge: 'max' });
  if (o.denyResponse !== undefined) {
    const context: DenyContext<R> = { request: raw, kind, status, problem, retryAfterSeconds, decision };
    const custom = o.denyResponse(context);
    if (custom !== undefined) {
      if (custom.status !== undefined) finalStatus = custom.status;
      if (custom.body !== undefined) body = custom.body;
      if (custom.contentType !== undefined) contentType = custom.contentType;
      for (const [name, value] of Object.entries(custom.headers ?? {})) headers.push({ name, value, merge: 'set' });
    }
  }
  headers.push({ name: 'Content-Type', value: contentType, merge: 'set' });
  return { allowed: false, outcome: kind, status: finalStatus, headers, body, decision, results, identity, degraded };
}

function limited<R>(
  o: CompiledOptions<R>,
  warn: Warner,
  raw: R,
  identity: string,
  policy: string,
  decision: Decision,
  shadow: boolean,
  shadowBanned: boolean,
): void {
  if (o.onLimited === undefined) return;
  try {
    o.onLimited({ request: raw, identity, policy, decision, shadow, shadowBanned });
  } catch (error) {
    report(o, warn, error, { request: raw, source: 'hook', policy, decision });
  }
}

type Warner = (error: unknown, event: ErrorEvent<unknown>) => void;

/** Without onError, a failing store still shows: one console warning a minute, naming the error. */
function warner(): Warner {
  let last = Number.NEGATIVE_INFINITY;
  let suppressed = 0;
  return (error, event) => {
    const now = Date.now();
    if (now - last < 60_000) {
      suppressed++;
      return;
    }
    last = now;
    const more = suppressed > 0 ? ` (${suppressed} more since the last warning)` : '';
    suppressed = 0;
    const message = error instanceof Error ? error.message : String(error);
    console.warn(`[sluice] ${event.source} failure in policy "${event.policy ?? '?'}": ${message}${more}. Pass onError to handle it.`);
  };
}

function report<R>(o: CompiledOptions<R>, warn: Warner, error: unknown, event: ErrorEvent<R>): void {
  if (o.onError === undefined) {
    warn(error, event as ErrorEvent<unknown>);
    return;
  }
  try {
    o.onError(error, event);
  } catch {
    // onError is the last stop: an exception thrown by it has nowhere better to go than the warning.
    warn(error, event as ErrorEvent<unknown>);
  }
}
