import { SluiceError, isSluiceError, type Decision } from '@sluice/core';
import { compileOptions, type CompiledEntry, type CompiledOptions } from './compile-options.js';
import { describe } from './describe.js';
import { ceilSeconds, rateLimitFields, type HeaderField } from './header-fields.js';
import { drive, isPromiseLike } from './maybe-async.js';
import type { ClientIpResult } from './client-ip.js';
import type { DenyContext, HttpLimitOptions, IdentityValue } from './options.js';
import { limited, report, warner, type Warner } from './report.js';
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
  const general = (request: HttpRequest, raw: R) => drive(flow(compiled, request, raw, warn));
  const simple = isSimple(compiled);
  const run = (request: HttpRequest, raw?: R) => {
    const hooks = (raw === undefined ? request : raw) as R;
    return simple !== undefined && simple.sync === true ? fast(compiled, simple, request, hooks, warn) : general(request, hooks);
  };
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

function* flow<R>(o: CompiledOptions<R>, request: HttpRequest, raw: R, warn: Warner): Generator<unknown, HandleResult, unknown> {
  // Hooks may answer with a promise; only then does the flow yield (and the driver go async).
  if (o.skip !== undefined) {
    let skip: unknown = o.skip(raw);
    if (isPromiseLike(skip)) skip = yield skip;
    if (skip === true) return passThrough('skipped', [], undefined, false);
  }

  let identity: string | undefined;
  if (o.needsShared) {
    let shared = resolveShared(o, request, raw);
    if (isPromiseLike(shared)) shared = (yield shared) as SharedIdentity;
    if (typeof shared !== 'string') {
      if (o.missing === 'deny' || shared.lost === true) return refusal(o, raw, 'unidentified', undefined, undefined, [], undefined, false, shared.problem);
    } else {
      identity = shared;
    }
  }

  const results: LimiterResult[] = [];
  const consulted: CompiledEntry<R>[] = [];
  let sharedCost: number | undefined;
  let refused: number | undefined;
  let degraded = false;
  let shadowed = false;
  for (const entry of o.entries) {
    let key: string | undefined;
    if (entry.identify !== undefined) {
      let own: unknown = entry.identify(raw);
      if (isPromiseLike(own)) own = yield own;
      const text = identityText(own as IdentityValue, 'identify');
      if (text !== undefined) key = `key:${text}`;
    }
    key ??= entry.kind === 'shed' ? 'server' : identity;
    if (key === undefined) continue; // no identity under onMissingIdentity: 'skip'

    let cost: number;
    if (entry.cost !== undefined) {
      let own: unknown = typeof entry.cost === 'function' ? entry.cost(raw) : entry.cost;
      if (isPromiseLike(own)) own = yield own;
      cost = own as number;
    } else {
      if (sharedCost === undefined) {
        let value: unknown = typeof o.cost === 'function' ? o.cost(raw) : o.cost;
        if (isPromiseLike(value)) value = yield value;
        sharedCost = value as number;
      }
      cost = sharedCost;
    }
    let decision: Decision | PromiseLike<Decision> = consume(entry, key, cost);
    if (isPromiseLike(decision)) decision = (yield decision) as Decision;
    results.push({ policy: entry.policy, kind: entry.kind, identity: key, cost, decision });
    consulted.push(entry);
    const verdict = note(o, warn, raw, entry, key, decision);
    if (verdict & DEGRADED) degraded = true;
    if (verdict & SHADOWED) shadowed = true;
    if (verdict & REFUSED) {
      refused = results.length - 1;
      break;
    }
  }

  if (refused === undefined) return allowedResult(o, results, identity, degraded, shadowed);

  // All or nothing across limiters, as within one: give back what the earlier ones took.
  for (let i = 0; i < refused; i++) {
    const earlier = results[i]!;
    if (!earlier.decision.allowed || earlier.decision.reason !== 'ok' || earlier.cost === 0) continue;
    try {
      let back: Decision | PromiseLike<Decision> = giveBack(consulted[i]!, earlier.identity, earlier.cost);
      if (isPromiseLike(back)) back = (yield back) as Decision;
      if (!back.degraded) results[i] = { ...earlier, decision: { ...back, rule: earlier.decision.rule } };
    } catch (error) {
      report(o, warn, error, { request: raw, source: 'store', policy: earlier.policy }, consulted[i]!.store);
    }
  }

  return refusedResult(o, raw, warn, results, refused, identity, degraded);
}

/**
 * The one entry of a configuration with no hooks that could return a promise (no skip, identify, cost function
 * or clientIp function, one plain limiter): such requests are decided by `fast`, without the generator.
 */
function isSimple<R>(o: CompiledOptions<R>): CompiledEntry<R> | undefined {
  const entry = o.entries[0]!;
  const plain = o.entries.length === 1 && entry.kind === 'limit' && entry.identify === undefined && typeof entry.cost !== 'function';
  return plain && o.skip === undefined && o.identify === undefined && typeof o.cost === 'number' && !o.clientIpIsHook ? entry : undefined;
}

/** `flow` for a simple configuration over a synchronous store, as straight-line code. */
function fast<R>(
  o: CompiledOptions<R>,
  entry: CompiledEntry<R>,
  request: HttpRequest,
  raw: R,
  warn: Warner,
): HandleResult | Promise<HandleResult> {
  const shared = afterIdentify(o, request, raw, undefined) as SharedIdentity; // synchronous: clientIp is no hook
  let identity: string;
  if (typeof shared === 'string') {
    identity = shared;
  } else if (o.missing === 'deny' || shared.lost === true) {
    return refusal(o, raw, 'unidentified', undefined, undefined, [], undefined, false, shared.problem);
  } else {
    return passThrough('skipped', [], undefined, false);
  }
  const cost = (entry.cost ?? o.cost) as number;
  const decided = consume(entry, identity, cost);
  // limitSync refused (a synchronous store falling back to an asynchronous one): limit() answered instead.
  if (isPromiseLike(decided)) return decided.then((decision) => concludeOne(o, entry, raw, warn, identity, cost, decision));
  return concludeOne(o, entry, raw, warn, identity, cost, decided);
}

function concludeOne<R>(o: CompiledOptions<R>, entry: CompiledEntry<R>, raw: R, warn: Warner, identity: string, cost: number, decision: Decision): HandleResult {
  const results: LimiterResult[] = [{ policy: entry.policy, kind: entry.kind, identity, cost, decision }];
  const verdict = note(o, warn, raw, entry, identity, decision);
  if (verdict & REFUSED) return refusedResult(o, raw, warn, results, 0, identity, (verdict & DEGRADED) !== 0);
  return allowedResult(o, results, identity, (verdict & DEGRADED) !== 0, (verdict & SHADOWED) !== 0);
}

const DEGRADED = 1;
const SHADOWED = 2;
const REFUSED = 4;

/** Reports what one decision means (degraded store, shadow would-be refusal) and says whether it refuses. */
function note<R>(o: CompiledOptions<R>, warn: Warner, raw: R, entry: CompiledEntry<R>, key: string, decision: Decision): number {
  let verdict = 0;
  if (decision.degraded) {
    verdict |= DEGRADED;
    report(o, warn, decision.error, { request: raw, source: 'store', policy: entry.policy, decision }, entry.store);
  }
  if (!decision.allowed || decision.reason === 'shadow') {
    if (decision.allowed || o.shadow) {
      limited(o, warn, raw, key, entry.policy, decision, true, false);
      return verdict | SHADOWED;
    }
    return verdict | REFUSED;
  }
  return verdict;
}

function allowedResult<R>(o: CompiledOptions<R>, results: readonly LimiterResult[], identity: string | undefined, degraded: boolean, shadowed: boolean): HandleResult {
  if (results.length === 0) return passThrough('skipped', [], identity, false);
  const decider = leastRoom(results);
  const headers = rateLimitFields(counted(results), decider, o);
  return passThrough(shadowed ? 'shadow' : 'allowed', headers, identity, degraded, results, results[decider]!.decision);
}

function refusedResult<R>(
  o: CompiledOptions<R>,
  raw: R,
  warn: Warner,
  results: readonly LimiterResult[],
  refused: number,
  identity: string | undefined,
  degraded: boolean,
): HandleResult {
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
    // The same fields an allowed response carries (and no Retry-After): a ban the client can tell apart by its
    // header names is no shadow ban.
    const headers = rateLimitFields(counted(results), refused, o);
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
  limited(o, warn, raw, results[refused]!.identity, policy, decision, false, false);
  const headers = rateLimitFields(counted(results), refused, {
    styles: o.styles,
    legacyReset: o.legacyReset,
    maxWindowSeconds: retryAfterSeconds(REFUSAL_STATUS[kind], decision),
  });
  return refusal(o, raw, kind, decision, { policy, cost }, headers, identity, degraded, undefined, results);
}

/** Whole seconds for Retry-After on a 429 or 503 (at least 1), none on other refusals. */
function retryAfterSeconds(status: number, decision: Decision | undefined): number | undefined {
  if (status !== 429 && status !== 503) return undefined;
  return Math.max(1, ceilSeconds(decision !== undefined && Number.isFinite(decision.retryAfter) ? decision.retryAfter : 1000));
}

/** `lost`: the client's address was lost with its connection; refused whatever onMissingIdentity says. */
type SharedIdentity = string | { problem: string; lost?: true };

const CONNECTION_LOST: SharedIdentity = {
  problem: 'there is no authenticated id and the connection was reset before its address could be read',
  lost: true,
};

/** The shared identity: the authenticated id, else the client IP, else the named bucket, else a problem. */
function resolveShared<R>(o: CompiledOptions<R>, request: HttpRequest, raw: R): SharedIdentity | PromiseLike<SharedIdentity> {
  if (o.identify === undefined) return afterIdentify(o, request, raw, undefined);
  const value = o.identify(raw);
  return isPromiseLike(value) ? value.then((v) => afterIdentify(o, request, raw, v)) : afterIdentify(o, request, raw, value);
}

function afterIdentify<R>(o: CompiledOptions<R>, request: HttpRequest, raw: R, value: IdentityValue): SharedIdentity | PromiseLike<SharedIdentity> {
  const id = identityText(value, 'identify');
  if (id !== undefined) return `user:${id}`;
  if (o.clientIp === undefined) return fromAddress(o, undefined);
  // Not "no identity": counting it in a shared bucket, or letting it through, would reward resetting.
  if (request.connectionLost === true) return CONNECTION_LOST;
  const ip = o.clientIp(request, raw);
  return isPromiseLike(ip) ? ip.then((r) => fromAddress(o, r)) : fromAddress(o, ip);
}

function fromAddress<R>(o: CompiledOptions<R>, ip: ClientIpResult | undefined): SharedIdentity {
  if (ip !== undefined && ip.ok) return ip.identity;
  if (o.missing !== 'deny' && o.missing !== 'skip') return o.missing;
  return {
    problem: ip === undefined ? 'there is no authenticated id and IP fallback is off (clientIp: false)' : `there is no authenticated id and ${ip.problem}`,
  };
}

function identityText(value: IdentityValue, field: string): string | undefined {
  if (value === undefined || value === null || value === '') return undefined;
  if (typeof value === 'string') return value;
  if (typeof value === 'number' && Number.isFinite(value)) return String(value);
  throw new SluiceError('INVALID_IDENTITY', `${field} must return a string, a number, undefined or null, got ${describe(value)}`);
}

/** The options object for the usual cost, made once rather than per request. */
const COST_ONE = Object.freeze({ cost: 1 });

/** `limitSync` where the store allows it (learnt once per limiter), `limit` otherwise. */
function consume<R>(entry: CompiledEntry<R>, key: string, cost: number): Decision | Promise<Decision> {
  const options = cost === 1 ? COST_ONE : { cost };
  const limiter = entry.limiter as typeof entry.limiter & { limitSync?: (id: string, o: { cost: number }) => Decision };
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

function giveBack<R>(entry: CompiledEntry<R>, key: string, cost: number): Decision | Promise<Decision> {
  const limiter = entry.limiter as typeof entry.limiter & { refundSync?: (id: string, o: { cost: number }) => Decision };
  if (entry.sync === true && typeof limiter.refundSync === 'function') return limiter.refundSync(key, { cost });
  return entry.limiter.refund(key, { cost });
}

/**
 * Results as header reports. A failure-policy answer (reason `store_unavailable`) has no counts behind it, so it
 * reports no rules rather than an invented "full" or "empty"; a fallback store's answer has real counts and stays.
 */
function counted(results: readonly LimiterResult[]): readonly LimiterResult[] {
  let failed = false;
  for (let i = 0; i < results.length; i++) if (results[i]!.decision.reason === 'store_unavailable') failed = true;
  if (!failed) return results;
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
  const retryAfter = retryAfterSeconds(status, decision);
  const rule = decision?.rules.find((r) => r.id === decision.rule);
  // Name the violated policy exactly as its RateLimit item is named: `policy/ruleId` for a compound limiter.
  const compound = decision !== undefined && decision.rules.length > 1;
  const problem = problemFor({
    kind,
    policy: about === undefined ? undefined : compound ? `${about.policy}/${decision.rule}` : about.policy,
    limit: decision?.limit,
    windowMs: rule?.windowMs,
    cost: about?.cost,
    retryAfterSeconds: retryAfter,
    reason,
  });
  let body = JSON.stringify(problem);
  let contentType = PROBLEM_CONTENT_TYPE;
  let finalStatus = status;
  const headers: HeaderField[] = [...rateHeaders];
  if (retryAfter !== undefined) headers.push({ name: 'Retry-After', value: String(retryAfter), merge: 'max' });
  if (o.denyResponse !== undefined) {
    const context: DenyContext<R> = { request: raw, kind, status, problem, retryAfterSeconds: retryAfter, decision };
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
