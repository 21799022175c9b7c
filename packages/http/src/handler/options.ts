import type { Decision, Limiter } from '@sluice/core';
import type { ClientIpOptions } from './client-ip.js';
import type { DenyEntry } from './deny/list.js';
import type { HeaderStyle, LegacyReset } from '../shared/header-fields.js';
import type { ProblemDetails, RefusalKind } from './problem.js';

type MaybePromise<T> = T | Promise<T>;

/** An identity a hook may return: a string or number id; `undefined`/`null` means "none here, fall back". */
export type IdentityValue = string | number | undefined | null;

/**
 * One limiter and how it applies. A bare `Limiter` is the same as `{ limiter }`. Counters belong to the limiter
 * and the identity: two routes that use one limiter for one client share its counter.
 */
export interface LimiterEntry<R> {
  limiter: Limiter;
  /** `limit`: refusals are 429. `shed`: a guard on the server's own capacity, shared by every client; refusals are 503. @default 'limit' */
  kind?: 'limit' | 'shed';
  /** The identity for this limiter alone (a tenant, an API key). Falls back to the shared resolution when it returns nothing. */
  identify?: (request: R) => MaybePromise<IdentityValue>;
  /** Cost for this limiter alone; see the shared `cost`. */
  cost?: number | ((request: R) => MaybePromise<number>);
  /**
   * The limiter's name in headers (its RateLimit-Policy item), problem bodies and events: printable ASCII, at most 64
   * characters. @default limiter.name
   */
  name?: string;
}

/** What happens to a request that has neither an authenticated id nor a usable client address. */
export type MissingIdentityAnswer = 'refuse' | 'skip' | { readonly bucket: string };

export interface ShadowBanOptions<R> {
  /** Only shadow-ban when this says so (e.g. for flagged abusers); others get the ordinary 429. @default always */
  when?: (request: R, decision: Decision) => boolean;
  /** @default 200 */
  status?: number;
  /** @default '{}' */
  body?: string;
  /** @default 'application/json; charset=utf-8' */
  contentType?: string;
}

/**
 * What the `denyList` option takes: `matchDenyList`, exported by `@sluice/http` and every adapter. Opaque: its
 * members are the handler's business.
 */
export interface DenyListStep {
  readonly step: 'deny-list';
}

/** What a refusal response will be, passed to `refusalResponse` so it can adjust it. */
export interface RefusalContext<R> {
  readonly request: R;
  readonly kind: RefusalKind;
  readonly status: number;
  readonly problem: ProblemDetails;
  /** Whole seconds for Retry-After, when the status carries one. */
  readonly retryAfterSeconds: number | undefined;
  readonly decision: Decision | undefined;
}

export interface RefusalResponse {
  status?: number;
  body?: string;
  contentType?: string;
  headers?: Readonly<Record<string, string>>;
}

export interface LimitedEvent<R> {
  readonly request: R;
  readonly identity: string;
  /** The refusing limiter's name (its entry's `name`, else the limiter's own). */
  readonly limiterName: string;
  readonly decision: Decision;
  /** The request went through anyway (shadow mode): this is what would have been refused. */
  readonly shadow: boolean;
  /** It was answered with the shadow-ban response. */
  readonly shadowBanned: boolean;
}

/** A request from a client on a limiter's deny list (see the README's deny list section). */
export interface DeniedEvent<R> {
  readonly request: R;
  /** The shared identity (`user:…`, `ip:…`), when one was resolved. */
  readonly identity: string | undefined;
  /** The client's address as limiting reads it, when one was resolved. */
  readonly address: string | undefined;
  /** The limiter whose deny list holds the entry, by its name (its entry's `name`, else the limiter's own). */
  readonly limiterName: string;
  readonly entry: DenyEntry;
  /** The request went through anyway (shadow mode, the limiter's or this handler's): it would have been refused with 403. */
  readonly shadow: boolean;
}

export interface ErrorEvent<R> {
  readonly request: R;
  /**
   * `store`: a degraded decision (the store failed; the limiter's onStoreError policy answered). `hook`: onLimited
   * or onDenied threw. `deny-list`: a limiter's deny list holds entries that cannot be read (left out), or this
   * handler was not given `denyList` and so does not enforce it; once per list.
   */
  readonly source: 'store' | 'hook' | 'deny-list';
  /** The limiter concerned, by its name, when there is one. */
  readonly limiterName?: string;
  readonly decision?: Decision;
}

/**
 * Options shared by every adapter. `R` is the framework's request object, handed to every hook.
 */
export interface HttpLimitOptions<R> {
  /** One limiter, or several that must all pass, checked in order. */
  limiter: Limiter | LimiterEntry<R> | ReadonlyArray<Limiter | LimiterEntry<R>>;
  /**
   * The authenticated user (or API key, or tenant) behind the request: identity comes from here first, and the
   * client IP is only the fallback for anonymous requests. Keys: `user:<id>`, `ip:<address or /prefix>`.
   */
  identify?: (request: R) => MaybePromise<IdentityValue>;
  /**
   * How to find the client IP, or `false` to never limit by IP. A function may return the address text itself.
   * @default {} (the socket address; forwarding headers ignored)
   */
  clientIp?: ClientIpOptions | ((request: R) => MaybePromise<string | undefined>) | false;
  /** No id and no address: refuse with 400, let through unlimited, or count in one named shared bucket. @default 'refuse' */
  onMissingIdentity?: MissingIdentityAnswer;
  /** Requests that are not limited at all (and get no headers). */
  skip?: (request: R) => MaybePromise<boolean>;
  /** Units this request takes from each limiter, a non-negative integer. @default 1 */
  cost?: number | ((request: R) => MaybePromise<number>);
  /** Count and send headers, but never refuse (rolling out a new limit); denied clients are reported to onDenied and let through. @default false */
  shadow?: boolean;
  /** Answer refused requests with a normal-looking response instead of 429, without running the route. @default false */
  shadowBan?: boolean | ShadowBanOptions<R>;
  /** Which rate-limit header dialects to send; `false` for none. @default 'draft-11' */
  headers?: HeaderStyle | readonly HeaderStyle[] | false;
  /** `X-RateLimit-Reset` convention for the legacy headers. @default 'epoch-seconds' */
  legacyReset?: LegacyReset;
  /** Adjust or replace any refusal response (status, body, content type, extra headers). */
  refusalResponse?: (context: RefusalContext<R>) => RefusalResponse | undefined;
  /** Every refusal, and every would-be refusal in shadow mode: for logs and metrics. */
  onLimited?: (event: LimitedEvent<R>) => void;
  /**
   * Enforce the limiters' deny lists (`configure({ deny })`, or the runtime configuration through `watchConfig`):
   * pass `matchDenyList`, from `@sluice/http` or the adapter. Opt-in so that a worker without a deny list does not
   * ship the matcher; without it, a limiter that holds a list is reported once to onError (or the console).
   */
  denyList?: DenyListStep;
  /** Every request refused by a limiter's deny list (403), and every one shadow mode let through. */
  onDenied?: (event: DeniedEvent<R>) => void;
  /**
   * Store failures (degraded decisions) and errors thrown by onLimited. When absent, sluice warns on the console
   * at most once a minute, so a failing store is never silent.
   */
  onError?: (error: unknown, event: ErrorEvent<R>) => void;
}

export const HTTP_OPTION_NAMES: readonly string[] = [
  'limiter',
  'identify',
  'clientIp',
  'onMissingIdentity',
  'skip',
  'cost',
  'shadow',
  'shadowBan',
  'headers',
  'legacyReset',
  'refusalResponse',
  'onLimited',
  'denyList',
  'onDenied',
  'onError',
];
