import { optionalFunction, rejectUnknownOptions } from '@sluice/core/store';
import { SluiceError, type ConcurrencyLimiter, type FleetShedder, type Lease, type UtilizationShedder } from '@sluice/core';
import type { NextRequest } from 'next/server';
import { PROBLEM_CONTENT_TYPE, problemFor, type RefusalKind } from './http.js';
import type { WaitUntilEvent } from './options.js';
import type { NextRateLimit } from './rate-limit.js';
import { toNextResponse, withRateLimitHeaders } from './responses.js';

export type NextStackLayer = 'rate' | 'concurrency' | 'fleet' | 'worker';

export interface NextTrafficStackOptions {
  /** Request rate per client (429): a `rateLimit({...})` made once at module scope. */
  rate?: NextRateLimit;
  /** Requests in flight per client (429), held until the response body has been sent or cancelled. */
  concurrency?: {
    limiter: ConcurrencyLimiter;
    /** The client. Default: the identity the rate layer resolved. */
    identify?: (request: NextRequest) => string | undefined;
  };
  /** Fleet-wide in-flight work with a reserve for critical classes (503). */
  fleet?: FleetShedder;
  /**
   * This process's utilization (503). Node runtime only (route handlers on `runtime: 'nodejs'`): its default signal
   * refuses to be built on the edge runtime.
   */
  worker?: UtilizationShedder;
  /** The request's priority class for `fleet` and `worker`. Required with either. */
  priority?: (request: NextRequest) => string;
}

type RouteHandler<C> = (request: NextRequest, context: C) => Response | Promise<Response>;

const KNOWN = ['rate', 'concurrency', 'fleet', 'worker', 'priority'];

/**
 * Wraps a route handler in seed 000's four limiters, in the seed's order (rate → concurrency → fleet → worker).
 * A refusal is answered with problem+json naming the layer (`refusedBy`), 429 or 503, and Retry-After. Leases are
 * held until the handler's response body has been read to its end or cancelled (a client that went away), or the
 * handler threw.
 * @example
 * export const GET = withTrafficStack(async (request) => Response.json(await report()), { rate, concurrency: { limiter: inFlight } });
 */
export function withTrafficStack<C = unknown>(handler: RouteHandler<C>, options: NextTrafficStackOptions): (request: NextRequest, context: C & Partial<WaitUntilEvent>) => Promise<Response> {
  if (typeof handler !== 'function') throw new SluiceError('INVALID_OPTION', `withTrafficStack: the first argument must be a route handler (request) => Response, got ${typeof handler}`);
  if (typeof options !== 'object' || options === null) throw new SluiceError('INVALID_OPTION', 'withTrafficStack: options must be an object such as { rate, concurrency: { limiter } }');
  rejectUnknownOptions(options, KNOWN, 'withTrafficStack');
  const { rate, concurrency, fleet, worker, priority } = options;
  optionalFunction(priority, 'withTrafficStack: priority', '(request) => class');
  if ((fleet !== undefined || worker !== undefined) && priority === undefined) {
    throw new SluiceError('INVALID_OPTION', 'withTrafficStack: priority must be a function (request) => class when fleet or worker is given');
  }
  if (concurrency !== undefined && concurrency.identify === undefined && rate === undefined) {
    throw new SluiceError('INVALID_OPTION', 'withTrafficStack: concurrency needs identify (request) => client, or a rate layer whose identity it can use');
  }

  return async function sluiceTrafficStack(request, context) {
    const leases: Lease[] = [];
    const release = (): void => {
      for (const lease of leases.splice(0)) void lease.release();
    };
    try {
      const rated = rate === undefined ? undefined : await rate.check(request, typeof context?.waitUntil === 'function' ? (context as WaitUntilEvent) : undefined);
      if (rated !== undefined && !rated.allowed) return toNextResponse(rated);
      const cls = priority?.(request);
      if (concurrency !== undefined) {
        const identity = concurrency.identify?.(request) ?? rated?.identity;
        if (identity !== undefined) {
          const d = await concurrency.limiter.acquire(identity, { signal: request.signal });
          if (!d.allowed) return refusal('concurrency', 'limited', concurrency.limiter.name, d.retryAfter, release);
          if (d.lease !== undefined) leases.push(d.lease);
        }
      }
      if (fleet !== undefined) {
        const d = await fleet.acquire(cls!, { signal: request.signal });
        if (!d.allowed) return refusal('fleet', 'shed', 'fleet', d.retryAfter, release);
        if (d.lease !== undefined) leases.push(d.lease);
      }
      if (worker !== undefined) {
        const d = worker.check(cls!);
        if (!d.allowed) return refusal('worker', 'shed', 'worker', d.retryAfter, release);
      }
      const response = await handler(request, context);
      const held = releasingBody(response, release);
      return rated === undefined ? held : withRateLimitHeaders(rated, held);
    } catch (error) {
      release();
      throw error;
    }
  };
}

function refusal(layer: NextStackLayer, kind: RefusalKind, policy: string, retryAfterMs: number, release: () => void): Response {
  release();
  const retryAfterSeconds = Math.max(1, Math.ceil(retryAfterMs / 1000));
  return new Response(JSON.stringify({ ...problemFor({ kind, policy, retryAfterSeconds }), refusedBy: layer }), {
    status: kind === 'shed' ? 503 : 429,
    headers: { 'Content-Type': PROBLEM_CONTENT_TYPE, 'Retry-After': String(retryAfterSeconds) },
  });
}

/** The handler's response with a body that releases the leases once read to its end, failed or cancelled. */
function releasingBody(response: Response, release: () => void): Response {
  const body = response.body;
  if (body === null) {
    release();
    return response;
  }
  const reader = body.getReader();
  const stream = new ReadableStream<Uint8Array>({
    async pull(controller) {
      try {
        const { done, value } = await reader.read();
        if (done) {
          release();
          controller.close();
        } else {
          controller.enqueue(value);
        }
      } catch (error) {
        release();
        controller.error(error);
      }
    },
    cancel(reason) {
      release();
      return reader.cancel(reason);
    },
  });
  return new Response(stream, { status: response.status, statusText: response.statusText, headers: response.headers });
}
