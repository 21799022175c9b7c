// Everything this package takes from @sluice/http comes in through here and ./http.ts.
import type { Context, Env } from 'hono';
import type { DeniedEvent, ErrorEvent, HandleResult, HttpLimitOptions, LimitedEvent } from '@sluice/http';

/** What the middleware leaves on the context: `c.get('rateLimit')`, the handler's whole answer. */
export type RateLimitInfo = HandleResult;

/** The variables this middleware sets, for an app that declares its `Env` (`new Hono<{ Variables: RateLimitVariables }>()`). */
export interface RateLimitVariables {
  /** The last sluice middleware's answer for this request: decision, identity, outcome, headers. */
  rateLimit: RateLimitInfo;
}

declare module 'hono' {
  interface ContextVariableMap {
    /** Set by @sluice/hono: the last sluice middleware's answer for this request. */
    rateLimit: RateLimitInfo;
  }
}

/** What `onDecision` receives: the context and the handler's whole answer for its request. */
export interface DecisionEvent<E extends Env = Env> {
  readonly request: Context<E>;
  readonly result: HandleResult;
}

/**
 * Every option of @sluice/http's handler; hooks receive the Hono `Context` (`c`), so `identify: (c) =>
 * c.get('user')?.id` reads what your auth middleware set. Hooks that return a promise (`onLimited`, `onDenied`,
 * `onError`, `onDecision`) never delay the response: on Cloudflare Workers the promise goes to `c.executionCtx.waitUntil`,
 * elsewhere it simply runs; a rejection goes to `onError`, never unhandled.
 */
export interface HonoRateLimitOptions<E extends Env = Env> extends Omit<
  HttpLimitOptions<Context<E>>,
  'onLimited' | 'onDenied' | 'onError'
> {
  /** Every refusal and every shadow would-be refusal. May return a promise (a log shipment). */
  onLimited?: (event: LimitedEvent<Context<E>>) => void | PromiseLike<unknown>;
  /** Every request a limiter's deny list refuses (403), and every one shadow mode lets through. May return a promise. */
  onDenied?: (event: DeniedEvent<Context<E>>) => void | PromiseLike<unknown>;
  /** Store failures (degraded decisions) and hook errors, background ones included. May return a promise. */
  onError?: (error: unknown, event: ErrorEvent<Context<E>>) => void | PromiseLike<unknown>;
  /** Called once per decided request (allowed, skipped or refused): analytics, audit logs. May return a promise. */
  onDecision?: (event: DecisionEvent<E>) => void | PromiseLike<unknown>;
}
