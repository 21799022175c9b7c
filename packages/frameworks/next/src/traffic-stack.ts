import { SluiceError } from '@sluice/core';
import type { NextRequest } from 'next/server';
import { checkStackLayers, heldUntilEnd, releasingBody, runStackLayers, type StackLayer, type StackLayers } from './http.js';
import type { WaitUntilEvent } from './options.js';
import type { NextRateLimit } from './rate-limit.js';
import { toNextResponse, withRateLimitHeaders } from './responses.js';

export type NextStackLayer = StackLayer;

/** The four layers for a route handler. The worker shedder reads the process: Node runtime only (its default signal refuses the edge runtime). */
export interface NextTrafficStackOptions extends StackLayers<NextRequest> {
  /** Request rate per client (429): a `rateLimit({...})` made once at module scope. Concurrency counts per the identity it resolves. */
  rate?: NextRateLimit;
}

type RouteHandler<C> = (request: NextRequest, context: C) => Response | Promise<Response>;

/**
 * Wraps a route handler in the four limiters of the article 'Scaling your API with rate limiters', in the article's
 * order (rate → concurrency → fleet → worker). A refusal is answered with problem+json naming the layer
 * (`refusedBy`), 429 or 503, and Retry-After. Leases are held until the handler's response body has been read to its
 * end or cancelled (a client that went away), or the handler threw.
 * @example
 * export const GET = withTrafficStack(async (request) => Response.json(await report()), { rate, concurrency: { limiter: inFlight } });
 */
export function withTrafficStack<C = unknown>(
  handler: RouteHandler<C>,
  options: NextTrafficStackOptions,
): (request: NextRequest, context: C & Partial<WaitUntilEvent>) => Promise<Response> {
  if (typeof handler !== 'function')
    throw new SluiceError(
      'INVALID_OPTION',
      `withTrafficStack: the first argument must be a route handler (request) => Response, got ${typeof handler}`,
    );
  const { rate, layers } = checkStackLayers(options, {
    where: 'withTrafficStack',
    example: '{ rate, concurrency: { limiter } }',
    rateOption: true,
  });

  return async function sluiceTrafficStack(request, context) {
    const leases = heldUntilEnd();
    try {
      const rated =
        rate === undefined
          ? undefined
          : await rate.check(request, typeof context?.waitUntil === 'function' ? (context as WaitUntilEvent) : undefined);
      if (rated !== undefined && !rated.allowed) return toNextResponse(rated);
      // The request's own signal releases a lease if the client goes away while the later layers decide.
      const { refusal } = await runStackLayers(layers, request, rated?.identity, leases.hold, { signal: request.signal });
      if (refusal !== undefined) {
        leases.release();
        return new Response(refusal.body, { status: refusal.status, headers: refusal.headers });
      }
      const response = await handler(request, context);
      const held = releasingBody(response, leases.release);
      return rated === undefined ? held : withRateLimitHeaders(rated, held);
    } catch (error) {
      leases.release();
      throw error;
    }
  };
}
