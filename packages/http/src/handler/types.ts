// The types the handler's steps pass to one another: the compiled options (compile-options.ts makes them), the
// deny list step as the handler calls it, the warner, and the result of one request. Apart from the steps
// (compile-options, decision, deny-step, report, response), so that each step takes them without importing
// another step for a type.
import type { Decision, Limiter } from '@sluice/core';
import type { DenyEntry, DenyLineage } from '@sluice/core/config';
import type { ClientIpResult } from './client-ip.js';
import type { DenyMatcher } from './deny/matcher.js';
import type { HeaderField, HeaderStyle, LegacyReset, PolicyItemCache } from '../shared/header-fields.js';
import type { DenyListStep, ErrorEvent, HttpLimitOptions, IdentityValue, ShadowBanOptions } from './options.js';
import type { RefusalKind } from './problem.js';
import type { HttpRequest } from './request.js';

type MaybePromise<T> = T | Promise<T>;

export interface CompiledEntry<R> {
  readonly limiter: Limiter;
  readonly kind: 'limit' | 'shed';
  /** The entry's `name`, else the limiter's: its RateLimit-Policy item and the `limiterName` of events. */
  readonly name: string;
  readonly identify: ((request: R) => MaybePromise<IdentityValue>) | undefined;
  readonly cost: number | ((request: R) => MaybePromise<number>) | undefined;
  /** Whether `limitSync` works for this limiter: learnt on first use (undefined until then). */
  sync: boolean | undefined;
  /** The store's class name, for the console warning about a failing store (undefined when unknown). */
  readonly store: string | undefined;
  /**
   * What this entry's deny matcher was got for (deny-check.ts): the limiter's deny lineage, at `denyVersion`, or
   * for a limiter without one, its list object.
   */
  denySource: DenyLineage | readonly DenyEntry[] | undefined;
  denyVersion: number;
  denyMatcher: DenyMatcher | undefined;
  /**
   * The clock deny entries expire on: the limiter's own where the implementation has one (core's does, as a
   * private method), so a fake clock in tests moves expiry with the counters; Date.now otherwise.
   */
  readonly denyNow: () => number;
}

export interface CompiledOptions<R> {
  readonly entries: readonly CompiledEntry<R>[];
  /** Some limiter may need the shared identity (all but `shed` ones with no identify of their own). */
  readonly needsShared: boolean;
  readonly identify: ((request: R) => MaybePromise<IdentityValue>) | undefined;
  readonly clientIp: ((request: HttpRequest, raw: R) => MaybePromise<ClientIpResult>) | undefined;
  /** clientIp is the user's function (it may return a promise), not the built-in resolver. */
  readonly clientIpIsHook: boolean;
  /** The client identity's IPv6 grouping (clientIp.ipv6Prefix), to which deny list blocks are widened. */
  readonly ipv6Prefix: number;
  readonly missing: 'refuse' | 'skip' | string;
  readonly skip: ((request: R) => MaybePromise<boolean>) | undefined;
  readonly cost: number | ((request: R) => MaybePromise<number>);
  readonly shadow: boolean;
  readonly shadowBan: (Required<Omit<ShadowBanOptions<R>, 'when'>> & Pick<ShadowBanOptions<R>, 'when'>) | undefined;
  readonly styles: readonly HeaderStyle[];
  readonly legacyReset: LegacyReset;
  readonly refusalResponse: HttpLimitOptions<R>['refusalResponse'];
  /** The deny list step (`matchDenyList`), when the handler enforces deny lists. */
  readonly denyList: DenyListSteps | undefined;
  readonly onLimited: HttpLimitOptions<R>['onLimited'];
  readonly onDenied: HttpLimitOptions<R>['onDenied'];
  readonly onError: HttpLimitOptions<R>['onError'];
  /** The console warning used without onError: one per handler, throttled to one a minute. */
  readonly warn: Warner;
  /** This handler's RateLimit-Policy items, built once per limiter name and rule (see header-fields.ts). */
  readonly policyItems: PolicyItemCache;
}

/** `store` names the store behind a degraded decision (its class), when known. */
export type Warner = (error: unknown, event: ErrorEvent<unknown>, store?: string) => void;

/** One limiter's part in the answer. */
export interface LimiterResult {
  /** The limiter's name, as its entry gives it (else the limiter's own): its RateLimit-Policy item's name. */
  readonly name: string;
  readonly kind: 'limit' | 'shed';
  readonly identity: string;
  readonly cost: number;
  readonly decision: Decision;
}

/**
 * What happened to the request:
 * - `allowed`: every limiter had room. `skipped`: `skip` said so, or no identity under `onMissingIdentity: 'skip'`.
 * - `shadow`: a limiter would have refused, but shadow mode let it through.
 * - `shadow_banned`: refused, and answered with the shadow-ban response.
 * - a refusal: `limited` (429), `shed` (503), `cost_exceeds_limit` (413), `store_unavailable` (503, the store
 *   failed and the limiter fails closed), `unidentified` (400, no identity under `onMissingIdentity: 'refuse'`),
 *   `denied` (403, on a limiter's deny list).
 */
export type Outcome = 'allowed' | 'skipped' | 'shadow' | 'shadow_banned' | RefusalKind;

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

/** The step as the handler calls it. */
export interface DenyListSteps extends DenyListStep {
  /** Whether the step has anything to do for this request (DENY_NONE, DENY_IDENTITY or DENY_ADDRESS). */
  readonly needs: <R>(o: CompiledOptions<R>, raw: R) => number;
  /** The 403 when an enforcing limiter's list matches, else undefined (shadow matches are reported). */
  readonly check: <R>(
    o: CompiledOptions<R>,
    raw: R,
    identity: string | undefined,
    ip: ClientIpResult | undefined,
  ) => HandleResult | undefined;
}
