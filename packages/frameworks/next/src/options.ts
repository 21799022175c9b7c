import { SluiceError, type Limiter } from '@sluice/core';
import type { DeniedEvent, ErrorEvent, HandleResult, HttpLimitOptions, LimitedEvent, LimiterEntry } from './http.js';
import type { NextRequest } from 'next/server';

/** Anything with `waitUntil`: the `NextFetchEvent` Next.js passes as the second argument of middleware and proxy. */
export interface WaitUntilEvent {
  waitUntil(promise: Promise<unknown>): void;
}

/** What `onDecision` receives: the request and the handler's whole answer for it. */
export interface DecisionEvent {
  readonly request: NextRequest;
  readonly result: HandleResult;
}

/**
 * Every option of @sluice/http's handler (hooks receive the `NextRequest`), plus where background work goes.
 * Hooks that return a promise (`onLimited`, `onDenied`, `onError`, `onDecision`) never delay the response: the promise is
 * handed to the request's `event.waitUntil` (or to `waitUntil`), and a rejection is reported, never unhandled.
 */
export interface NextRateLimitOptions extends Omit<HttpLimitOptions<NextRequest>, 'onLimited' | 'onDenied' | 'onError'> {
  /** Every refusal and every shadow would-be refusal. May return a promise (e.g. a log shipment). */
  onLimited?: (event: LimitedEvent<NextRequest>) => void | PromiseLike<unknown>;
  /** Every request a limiter's deny list refuses (403), and every one shadow mode lets through. May return a promise. */
  onDenied?: (event: DeniedEvent<NextRequest>) => void | PromiseLike<unknown>;
  /** Store failures (degraded decisions) and hook errors, background ones included. May return a promise. */
  onError?: (error: unknown, event: ErrorEvent<NextRequest>) => void | PromiseLike<unknown>;
  /**
   * Called once per decided request (allowed, skipped or refused), after the answer is known: analytics, audit
   * logs, a tiered store's sync. Return a promise for background work; it never delays the response.
   */
  onDecision?: (event: DecisionEvent) => void | PromiseLike<unknown>;
  /**
   * Where background promises go when the call has no `event` (a Route Handler, a Server Action): pass `after`
   * from `next/server`. With neither, the promise still runs, but the platform may freeze it after the response.
   */
  waitUntil?: (promise: Promise<unknown>) => void;
}

export const NEXT_OPTION_NAMES: readonly string[] = ['onDecision', 'waitUntil'];

function fail(message: string): never {
  throw new SluiceError('INVALID_OPTION', message);
}

function hasOwnIdentify(entry: unknown): boolean {
  const candidate = entry as Partial<LimiterEntry<NextRequest>> | null;
  return typeof candidate === 'object' && candidate !== null && 'limiter' in candidate && typeof candidate.identify === 'function';
}

function isShed(entry: unknown): boolean {
  const candidate = entry as Partial<LimiterEntry<NextRequest>> | null;
  return typeof candidate === 'object' && candidate !== null && 'limiter' in candidate && candidate.kind === 'shed';
}

/**
 * Next.js gives middleware and proxy no socket address (`request.ip` was removed in Next 15), so the parts of
 * @sluice/http's client-IP resolution that rely on one cannot work here. Configurations that could therefore
 * never identify anyone, or that would silently ignore a proxy list, are refused when the limiter is built
 * rather than answering every request with 400.
 */
export function checkNextIdentity(options: NextRateLimitOptions): void {
  const ip = options.clientIp;
  if (typeof ip === 'object' && ip !== null) {
    const trust = ip.trustProxy;
    if (typeof trust === 'string' || Array.isArray(trust)) {
      fail(
        'clientIp.trustProxy lists proxy addresses, but Next.js exposes no socket address to check them against; ' +
          'use a hop count (trustProxy: 1 behind one reverse proxy that appends X-Forwarded-For) or a platform preset',
      );
    }
  }
  const ipCanResolve =
    typeof ip === 'function' ||
    (typeof ip === 'object' && ip !== null && ((ip.trustProxy !== undefined && ip.trustProxy !== false) || ip.platform !== undefined));
  if (ip === false || ipCanResolve || options.identify !== undefined) return;
  if (options.onMissingIdentity !== undefined && options.onMissingIdentity !== 'refuse') return;
  const entries: unknown[] = Array.isArray(options.limiter) ? [...(options.limiter as readonly unknown[])] : [options.limiter as Limiter];
  if (entries.every((entry) => isShed(entry) || hasOwnIdentify(entry))) return;
  fail(
    'clientIp: Next.js gives middleware no socket address (request.ip was removed in Next 15), so with no identify and ' +
      'no clientIp every request would be refused with 400. Pass identify (the signed-in user), clientIp: { platform: ' +
      "'vercel' | 'cloudflare' | 'fly' }, clientIp: { trustProxy: <hops> } behind your own reverse proxy, or onMissingIdentity",
  );
}
