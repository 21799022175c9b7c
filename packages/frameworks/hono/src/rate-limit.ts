import { optionalFunction } from '@sluice/core/internal';
import { applyHeaders, createHandler, type HandleResult, type HttpLimitOptions } from '@sluice/http';
import { checkOptionsObject } from '@sluice/http/adapter';
import type { Context, Env, MiddlewareHandler } from 'hono';
import type { StatusCode } from 'hono/utils/http-status';
import { background as backgroundHooks } from './background.js';
import { connectionOf } from './connection.js';
import type { HonoRateLimitOptions } from './options.js';

/**
 * Hono middleware that rate limits. Use it app-wide (`app.use(rateLimit({...}))`) or per route
 * (`app.post('/login', rateLimit({ limiter: login }), handler)`); several on one request add their RateLimit
 * items. An allowed request continues with `c.get('rateLimit')` set and the RateLimit headers on the response;
 * a refused one is answered here (429/503/413/400 problem+json with RateLimit and Retry-After headers) and the
 * route does not run. Errors thrown by your hooks (`identify`, `skip`, `cost`, `clientIp`) propagate to
 * `app.onError`.
 * @example
 * app.use('/api/*', rateLimit({ limiter, clientIp: { platform: 'cloudflare' } }));
 */
export function rateLimit<E extends Env = Env>(options: HonoRateLimitOptions<E>): MiddlewareHandler<E> {
  const decide = decider(options);
  return async function sluiceRateLimit(c, next) {
    const result = await decide(c);
    if (result.allowed) {
      await next();
      return undefined;
    }
    return refuse(c, result);
  };
}

/**
 * Decides a request: sets `c.get('rateLimit')`, runs `onDecision`, and puts the RateLimit headers on `c.res`
 * before the route runs. Hono carries headers set there into whatever response the route (or `notFound`, or
 * `onError`) makes, and a second sluice middleware merges its RateLimit items with them.
 */
export function decider<E extends Env>(options: HonoRateLimitOptions<E>): (c: Context<E>) => Promise<HandleResult> {
  checkOptionsObject(options, 'rateLimit options');
  const { onDecision, onLimited, onDenied, onError, ...shared } = options;
  optionalFunction(onDecision, 'onDecision', '({ request, result }) => void | Promise');
  optionalFunction(onLimited, 'onLimited', '(event) => void | Promise');
  optionalFunction(onDenied, 'onDenied', '(event) => void | Promise');
  optionalFunction(onError, 'onError', '(error, event) => void | Promise');

  const background = backgroundHooks(onError as ((error: unknown, event: unknown) => unknown) | undefined);
  const handlerOptions: HttpLimitOptions<Context<E>> = { ...shared };
  if (onLimited !== undefined) handlerOptions.onLimited = (event) => background.hand(event.request, 'onLimited', onLimited(event));
  if (onDenied !== undefined) handlerOptions.onDenied = (event) => background.hand(event.request, 'onDenied', onDenied(event));
  if (onError !== undefined) handlerOptions.onError = (error, event) => background.hand(event.request, 'onError', onError(error, event));
  const handler = createHandler<Context<E>>(handlerOptions);

  return async (c) => {
    const { remoteAddress, connectionLost } = connectionOf(c);
    const request = { headers: c.req.raw.headers, remoteAddress, connectionLost, method: c.req.method, url: c.req.url };
    const result = await handler.run(request, c);
    c.set('rateLimit', result);
    if (onDecision !== undefined) background.run(c, 'onDecision', () => onDecision({ request: c, result }));
    applyHeaders(result.headers, c.res.headers);
    return result;
  };
}

/** The refusal, with the headers already on `c.res` (its content type among them). */
export function refuse(c: Context, result: HandleResult): Response {
  // A refusal's status is one of 429, 503, 413, 400 or a `refusalResponse` / shadow-ban choice: a valid HTTP status.
  return c.newResponse(result.body ?? null, result.status as StatusCode);
}
