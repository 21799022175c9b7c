import { SluiceError } from '@sluice/core';
import { describeValue as describe, optionalFunction } from '@sluice/core/internal';
import { checkOptionsObject, createHandler, type HandleResult, type HttpLimitOptions, type HttpRequest } from './http.js';
import { NextResponse, type NextRequest } from 'next/server';
import { Background } from './background.js';
import { checkNextIdentity, type NextRateLimitOptions, type WaitUntilEvent } from './options.js';
import { toNextResponse, withRateLimitHeaders } from './responses.js';

/**
 * A Next.js middleware / proxy function that rate limits, with `check` for composing with your own logic.
 */
export interface NextRateLimit {
  /**
   * Decides the request: a refusal is answered with a `NextResponse` (429/503/413/400, problem+json, `RateLimit`
   * and `Retry-After`); an allowed request gets `NextResponse.next()` carrying the `RateLimit` headers.
   */
  (request: NextRequest, event?: WaitUntilEvent): Promise<NextResponse>;
  /**
   * The decision alone, for middleware that does more than rate limit: answer `toNextResponse(result)` when
   * `!result.allowed`, else add the headers to your own response with `withRateLimitHeaders(result, response)`.
   */
  check(request: NextRequest, event?: WaitUntilEvent): Promise<HandleResult>;
}

/**
 * Rate limiting for `middleware.ts` (edge runtime; memory or Upstash store) and `proxy.ts` (Node runtime; any
 * store). Build it once at module scope, so the limiter and its store client live as long as the instance.
 * @example
 * const limit = rateLimit({ limiter, clientIp: { platform: 'vercel' } });
 * export function proxy(request: NextRequest, event: NextFetchEvent) { return limit(request, event); }
 * export const config = { matcher: '/api/:path*' };
 */
export function rateLimit(options: NextRateLimitOptions): NextRateLimit {
  checkOptionsObject(options, 'rateLimit options');
  const { onDecision, waitUntil, onLimited, onDenied, onError, ...shared } = options;
  optionalFunction(onDecision, 'onDecision', '({ request, result }) => void | Promise');
  optionalFunction(waitUntil, 'waitUntil', '(promise) => void, such as after from next/server');
  optionalFunction(onLimited, 'onLimited', '(event) => void | Promise');
  optionalFunction(onDenied, 'onDenied', '(event) => void | Promise');
  optionalFunction(onError, 'onError', '(error, event) => void | Promise');
  checkNextIdentity(options);

  const background = new Background(waitUntil, onError);
  const { hooks } = background;
  const handlerOptions: HttpLimitOptions<NextRequest> = { ...shared };
  if (onLimited !== undefined) handlerOptions.onLimited = (event) => hooks.hand(event.request, 'onLimited', onLimited(event));
  if (onDenied !== undefined) handlerOptions.onDenied = (event) => hooks.hand(event.request, 'onDenied', onDenied(event));
  if (onError !== undefined) handlerOptions.onError = (error, event) => hooks.hand(event.request, 'onError', onError(error, event));
  const handler = createHandler<NextRequest>(handlerOptions);

  const check = async (request: NextRequest, event?: WaitUntilEvent): Promise<HandleResult> => {
    if (event !== undefined) {
      if (typeof (event as { waitUntil?: unknown } | null)?.waitUntil !== 'function') {
        throw new SluiceError('INVALID_OPTION', `the second argument must be the NextFetchEvent (with waitUntil), got ${describe(event)}`);
      }
      background.bind(request, event);
    }
    const result = await handler.handle(httpRequest(request), request);
    if (onDecision !== undefined) hooks.run(request, 'onDecision', () => onDecision({ request, result }));
    return result;
  };

  const limit = async (request: NextRequest, event?: WaitUntilEvent): Promise<NextResponse> => {
    const result = await check(request, event);
    return result.allowed ? withRateLimitHeaders(result, NextResponse.next()) : toNextResponse(result);
  };
  return Object.assign(limit, { check });
}

/**
 * What @sluice/http reads. There is no `remoteAddress`: Next.js exposes no socket to middleware or proxy code,
 * so the client address comes only from the headers that `clientIp` declares trustworthy.
 */
function httpRequest(request: NextRequest): HttpRequest {
  return { headers: request.headers, method: request.method, url: request.url };
}
