import type { IncomingMessage } from 'node:http';
import {
  checkStackLayers,
  heldUntilEnd,
  nodeHeaderTarget,
  runStackLayers,
  writeHeaders,
  type StackLayer,
  type StackLayers,
} from '@sluice/http/adapter';
import { rateLimit, type ExpressRateLimitOptions, type ExpressRequest, type RateLimitMiddleware } from './rate-limit.js';

export type { StackLayer };

export interface TrafficStackOptions<Req extends IncomingMessage = ExpressRequest> extends StackLayers<Req> {
  /** Request rate per client (429): every option of `rateLimit()`. Concurrency counts per the identity it resolves. */
  rate?: ExpressRateLimitOptions<Req>;
}

/** What the stack leaves on `req.trafficStack`. */
export interface TrafficStackInfo {
  /** The layer that refused the request, if one did. */
  readonly refusedBy: StackLayer | undefined;
  /** The priority class the request was given (with fleet or worker). */
  readonly priority: string | undefined;
}

declare global {
  // eslint-disable-next-line @typescript-eslint/no-namespace
  namespace Express {
    interface Request {
      /** Set by @sluice/express's trafficStack. */
      trafficStack?: TrafficStackInfo;
    }
  }
}

const REFUSED_BY_RATE: TrafficStackInfo = Object.freeze({ refusedBy: 'rate', priority: undefined });
const PASSED: TrafficStackInfo = Object.freeze({ refusedBy: undefined, priority: undefined });

/** The stack with only the rate layer: the rate middleware itself, with `req.trafficStack` set (no lease to watch). */
function rateOnly(rateLayer: RateLimitMiddleware): RateLimitMiddleware {
  return function sluiceTrafficStack(req, res, next) {
    const request = req as typeof req & { trafficStack?: TrafficStackInfo };
    request.trafficStack = REFUSED_BY_RATE;
    rateLayer(req, res, (error?: unknown) => {
      if (error === undefined) request.trafficStack = PASSED;
      next(error);
    });
  };
}

/**
 * The four limiters of the article 'Scaling your API with rate limiters' as one middleware, consulted in the
 * article's order: request rate (429) → concurrency (429) → fleet usage (503) → worker utilization (503). A refusal
 * says which layer refused (the problem body's `refusedBy` and `req.trafficStack`); a lease taken for the request
 * (concurrency, fleet) is released when the response ends: finished, aborted by the client, failed by a thrown error
 * or a timeout.
 * @example app.use(trafficStack({ rate: { limiter }, concurrency: { limiter: inFlight }, fleet, worker, priority: (req) => (req.method === 'GET' ? 'read' : 'write') }))
 */
export function trafficStack<Req extends IncomingMessage = ExpressRequest>(options: TrafficStackOptions<Req>): RateLimitMiddleware {
  const { rate, layers } = checkStackLayers(options, {
    where: 'trafficStack',
    example: '{ rate: { limiter }, concurrency: { limiter } }',
    rateOption: true,
  });
  const rateLayer = rate === undefined ? undefined : rateLimit<Req>(rate);
  if (rateLayer !== undefined && layers.concurrency === undefined && layers.fleet === undefined && layers.worker === undefined)
    return rateOnly(rateLayer);

  return function sluiceTrafficStack(req, res, next) {
    const request = req as Req & { trafficStack?: TrafficStackInfo; rateLimit?: { identity?: string } };
    const leases = heldUntilEnd(res);
    const afterRate = async (): Promise<void> => {
      const { priority, refusal } = await runStackLayers(layers, request, request.rateLimit?.identity, leases.hold);
      request.trafficStack = { refusedBy: refusal?.layer, priority };
      if (refusal === undefined) {
        next();
        return;
      }
      leases.release();
      // Merged onto what the rate layer wrote, so its RateLimit items agree with this Retry-After.
      writeHeaders(
        refusal.fields,
        nodeHeaderTarget(
          (name) => res.getHeader(name),
          (name, value) => res.setHeader(name, value),
        ),
      );
      res.statusCode = refusal.status;
      res.end(refusal.body);
    };
    const run = (): void => {
      afterRate().catch((error: unknown) => {
        leases.release();
        next(error);
      });
    };
    if (rateLayer === undefined) {
      run();
      return;
    }
    // Until the rate layer lets the request on, a refusal is its own (it answers the refusal itself).
    request.trafficStack = REFUSED_BY_RATE;
    rateLayer(req, res, (error?: unknown) => {
      if (error !== undefined) {
        next(error);
        return;
      }
      run();
    });
  };
}
