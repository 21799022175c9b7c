import { applyHeaders } from '@sluice/http';
import { checkStackLayers, heldUntilEnd, releasingBody, runStackLayers, type StackLayer, type StackLayers } from '@sluice/http/adapter';
import type { Context, Env, MiddlewareHandler } from 'hono';
import type { HonoRateLimitOptions } from './options.js';
import { decider, refuse } from './rate-limit.js';

/** What the stack leaves on `c.get('trafficStack')`. */
export interface TrafficStackInfo {
  /** The layer that refused the request, if one did. */
  readonly refusedBy: StackLayer | undefined;
  /** The priority class the request was given (with fleet or worker). */
  readonly priority: string | undefined;
}

declare module 'hono' {
  interface ContextVariableMap {
    /** Set by @sluice/hono's trafficStack. */
    trafficStack: TrafficStackInfo;
  }
}

/** The four layers; `priority` and each layer's hooks receive the Hono context. */
export interface HonoTrafficStackOptions<E extends Env = Env> extends StackLayers<Context<E>> {
  /** Request rate per client (429): every option of `rateLimit()`. Concurrency counts per the identity it resolves. */
  rate?: HonoRateLimitOptions<E>;
}

/**
 * The four limiters of the article 'Scaling your API with rate limiters' as one middleware, consulted in the
 * article's order: request rate (429) → concurrency (429) → fleet usage (503) → worker utilization (503). A refusal
 * is problem+json naming the layer (`refusedBy`) with Retry-After. A lease taken for the request is held until the
 * response body has been sent to its end or cancelled, the client went away (the request's signal aborted), or the
 * route failed.
 * @example
 * app.use('/api/*', trafficStack({ rate: { limiter }, concurrency: { limiter: inFlight } }));
 */
export function trafficStack<E extends Env = Env>(options: HonoTrafficStackOptions<E>): MiddlewareHandler<E> {
  const { rate, layers } = checkStackLayers(options, {
    where: 'trafficStack',
    example: '{ rate, concurrency: { limiter } }',
    rateOption: true,
  });
  const decide = rate === undefined ? undefined : decider(rate);

  return async function sluiceTrafficStack(c, next) {
    const rated = decide === undefined ? undefined : await decide(c);
    if (rated !== undefined && !rated.allowed) {
      c.set('trafficStack', { refusedBy: 'rate', priority: undefined });
      return refuse(c, rated);
    }
    const leases = heldUntilEnd();
    try {
      // A lease is tied to the request's signal: a client that goes away, while the later layers decide or while
      // the route runs, frees its slot at once (the signal aborts on disconnect in @hono/node-server).
      const { refusal, priority } = await runStackLayers(layers, c, rated?.identity, leases.hold, { signal: c.req.raw.signal });
      c.set('trafficStack', { refusedBy: refusal?.layer, priority });
      if (refusal !== undefined) {
        leases.release();
        // Merged onto what the rate layer wrote, so its RateLimit items agree with this Retry-After.
        applyHeaders(refusal.fields, c.res.headers);
        return c.newResponse(refusal.body, refusal.status);
      }
      await next();
    } catch (error) {
      leases.release();
      throw error;
    }
    if (leases.holding) c.res = releasingBody(c.res, leases.release);
    return undefined;
  };
}
