import type { Decision } from '@sluice/core';
import { isPromiseLike } from '@sluice/core/internal';
import type { ClientIpResult } from './client-ip.js';
import { compileOptions } from './compile-options.js';
import { DENY_ADDRESS, DENY_NONE, unenforcedDenyList } from './deny/step.js';
import { consume, DEGRADED, giveBack, REFUSED, reportVerdict, SHADOWED } from './decision.js';
import type { CompiledEntry, CompiledOptions, HandleResult, LimiterResult } from './types.js';
import { afterIdentify, identityText, resolveShared, type SharedIdentity } from './identity.js';
import { runMaybeAsync } from './maybe-async.js';
import type { HttpLimitOptions, IdentityValue } from './options.js';
import { report } from './report.js';
import type { HttpRequest } from './request.js';
import { allowedResult, refusal, refusedResult, skipped } from './response.js';

/**
 * The request handler every adapter wraps, in the order a request meets it: skip, the shared identity
 * (identity.ts), the limiters' deny lists (deny-check.ts), each limiter's decision (decision.ts), then the
 * response (response.ts). Hooks may answer with a
 * promise; a configuration whose hooks cannot, over a synchronous store, answers without one.
 */
export type { HandleResult, LimiterResult, Outcome } from './types.js';

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
  const simple = isSimple(compiled);
  const run = (request: HttpRequest, raw?: R) => {
    // Without a framework request, hooks receive the HttpRequest itself.
    const hooks = (raw === undefined ? request : raw) as R;
    return simple !== undefined && simple.sync === true
      ? decideSimpleRequest(compiled, simple, request, hooks)
      : runMaybeAsync(decideRequest(compiled, request, hooks));
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

function* decideRequest<R>(o: CompiledOptions<R>, request: HttpRequest, raw: R): Generator<unknown, HandleResult, unknown> {
  // Hooks may answer with a promise; only then does decideRequest yield (and runMaybeAsync go async).
  if (o.skip !== undefined) {
    let skip: unknown = o.skip(raw);
    if (isPromiseLike(skip)) skip = yield skip;
    if (skip === true) return skipped(undefined);
  }

  // The deny list comes before any limiter decides; its address is the one limiting reads, resolved once for both.
  const deny = o.denyList === undefined ? unenforcedDenyList(o, raw) : o.denyList.needs(o, raw);
  let ip: ClientIpResult | undefined;
  if (deny === DENY_ADDRESS && o.clientIp !== undefined && request.connectionLost !== true) {
    let resolved: unknown = o.clientIp(request, raw);
    if (isPromiseLike(resolved)) resolved = yield resolved;
    ip = resolved as ClientIpResult;
  }

  let identity: string | undefined;
  if (o.needsShared) {
    let shared = resolveShared(o, request, raw, ip);
    if (isPromiseLike(shared)) shared = (yield shared) as SharedIdentity;
    if (typeof shared !== 'string') {
      if (o.missing === 'refuse' || shared.lost === true) return unidentified(o, raw, shared.problem);
    } else {
      identity = shared;
    }
  }
  if (deny !== DENY_NONE) {
    const refused = o.denyList!.check(o, raw, identity, ip);
    if (refused !== undefined) return refused;
  }

  const results: LimiterResult[] = [];
  const consulted: CompiledEntry<R>[] = [];
  let sharedCost: number | undefined;
  let verdicts = 0;
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
    results.push({ name: entry.name, kind: entry.kind, identity: key, cost, decision });
    consulted.push(entry);
    verdicts |= reportVerdict(o, raw, entry, key, decision);
    if (verdicts & REFUSED) break;
  }

  const tally = { results, identity, degraded: (verdicts & DEGRADED) !== 0, shadowed: (verdicts & SHADOWED) !== 0 };
  if ((verdicts & REFUSED) === 0) return allowedResult(o, tally);

  // All or nothing across limiters, as within one: give back what the earlier ones took.
  for (let i = 0; i < results.length - 1; i++) {
    const earlier = results[i]!;
    if (!earlier.decision.allowed || earlier.decision.reason !== 'ok' || earlier.cost === 0) continue;
    try {
      let back: Decision | PromiseLike<Decision> = giveBack(consulted[i]!, earlier.identity, earlier.cost);
      if (isPromiseLike(back)) back = (yield back) as Decision;
      if (!back.degraded) results[i] = { ...earlier, decision: { ...back, rule: earlier.decision.rule } };
    } catch (error) {
      report(o, error, { request: raw, source: 'store', limiterName: earlier.name }, consulted[i]!.store);
    }
  }
  return refusedResult(o, raw, tally);
}

/**
 * The one entry of a configuration with no hooks that could return a promise (no skip, identify, cost function
 * or clientIp function, one plain limiter): such requests are decided by `decideSimpleRequest`, without the generator.
 */
function isSimple<R>(o: CompiledOptions<R>): CompiledEntry<R> | undefined {
  const entry = o.entries[0]!;
  const plain = o.entries.length === 1 && entry.kind === 'limit' && entry.identify === undefined && typeof entry.cost !== 'function';
  return plain && o.skip === undefined && o.identify === undefined && typeof o.cost === 'number' && !o.clientIpIsHook ? entry : undefined;
}

/** `decideRequest` for a simple configuration over a synchronous store, as straight-line code. */
function decideSimpleRequest<R>(
  o: CompiledOptions<R>,
  entry: CompiledEntry<R>,
  request: HttpRequest,
  raw: R,
): HandleResult | Promise<HandleResult> {
  // Synchronous: clientIp is no hook. The deny list step as in `decideRequest`.
  const deny = o.denyList === undefined ? unenforcedDenyList(o, raw) : o.denyList.needs(o, raw);
  const ip = deny === DENY_ADDRESS && o.clientIp !== undefined && request.connectionLost !== true ? o.clientIp(request, raw) : undefined;
  const shared = afterIdentify(o, request, raw, undefined, ip as ClientIpResult | undefined) as SharedIdentity;
  if (typeof shared !== 'string') {
    return o.missing === 'refuse' || shared.lost === true ? unidentified(o, raw, shared.problem) : skipped(undefined);
  }
  if (deny !== DENY_NONE) {
    const refused = o.denyList!.check(o, raw, shared, ip as ClientIpResult | undefined);
    if (refused !== undefined) return refused;
  }
  const cost = (entry.cost ?? o.cost) as number;
  const decided = consume(entry, shared, cost);
  // limitSync refused (a synchronous store falling back to an asynchronous one): limit() answered instead.
  if (isPromiseLike(decided)) return decided.then((decision) => resultForOneLimiter(o, entry, raw, shared, cost, decision));
  return resultForOneLimiter(o, entry, raw, shared, cost, decided);
}

/** The answer for one limiter's decision, on the shared identity. */
function resultForOneLimiter<R>(
  o: CompiledOptions<R>,
  entry: CompiledEntry<R>,
  raw: R,
  identity: string,
  cost: number,
  decision: Decision,
): HandleResult {
  const results: LimiterResult[] = [{ name: entry.name, kind: entry.kind, identity, cost, decision }];
  const verdict = reportVerdict(o, raw, entry, identity, decision);
  const tally = { results, identity, degraded: (verdict & DEGRADED) !== 0, shadowed: (verdict & SHADOWED) !== 0 };
  return verdict & REFUSED ? refusedResult(o, raw, tally) : allowedResult(o, tally);
}

/** No identity, under onMissingIdentity: 'refuse' or with the connection lost: 400, counted nowhere. */
function unidentified<R>(o: CompiledOptions<R>, raw: R, problem: string): HandleResult {
  return refusal(o, raw, { kind: 'unidentified', rateHeaders: [], degraded: false, reason: problem, results: [] });
}
