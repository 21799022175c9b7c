import type { IncomingMessage } from 'node:http';
import { optionalFunction, rejectUnknownOptions } from '@sluice/core/store';
import { SluiceError, type ConcurrencyLimiter, type FleetShedder, type Lease, type UtilizationShedder } from '@sluice/core';
import { PROBLEM_CONTENT_TYPE, problemFor, type RefusalKind } from '@sluice/http';
import { rateLimit, type ExpressRateLimitOptions, type ExpressRequest, type RateLimitMiddleware } from './rate-limit.js';

/** The four limiters of seed 000, in the order the stack consults them. */
export type StackLayer = 'rate' | 'concurrency' | 'fleet' | 'worker';

export interface TrafficStackOptions<Req extends IncomingMessage = ExpressRequest> {
  /** Request rate per client (429): every option of `rateLimit()`. */
  rate?: ExpressRateLimitOptions<Req>;
  /** Requests in flight per client (429): the lease is held until the response ends, however it ends. */
  concurrency?: {
    limiter: ConcurrencyLimiter;
    /** The client. Default: the identity the rate layer resolved (spoof-proof client IP or your `identify`). */
    identify?: (req: Req) => string | undefined;
  };
  /** Fleet-wide in-flight work with a reserve for critical classes (503). */
  fleet?: FleetShedder;
  /** This process's utilization (503). */
  worker?: UtilizationShedder;
  /** The request's priority class for `fleet` and `worker` (one of their classes). Required with either. */
  priority?: (req: Req) => string;
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
 * Seed 000's four limiters as one middleware, consulted in the seed's order: request rate (429) → concurrency
 * (429) → fleet usage (503) → worker utilization (503). A refusal says which layer refused (the problem body's
 * `refusedBy` and `req.trafficStack`); a lease taken for the request (concurrency, fleet) is released when the
 * response ends: finished, aborted by the client, failed by a thrown error or a timeout.
 * @example app.use(trafficStack({ rate: { limiter }, concurrency: { limiter: inFlight }, fleet, worker, priority: (req) => (req.method === 'GET' ? 'read' : 'write') }))
 */
const KNOWN = ['rate', 'concurrency', 'fleet', 'worker', 'priority'];

export function trafficStack<Req extends IncomingMessage = ExpressRequest>(options: TrafficStackOptions<Req>): RateLimitMiddleware {
  if (typeof options !== 'object' || options === null) {
    throw new SluiceError('INVALID_OPTION', 'trafficStack: options must be an object such as { rate: { limiter }, concurrency: { limiter } }');
  }
  const { rate, concurrency, fleet, worker, priority } = options;
  rejectUnknownOptions(options, KNOWN, 'trafficStack');
  optionalFunction(priority, 'trafficStack: priority', '(request) => class');
  if ((fleet !== undefined || worker !== undefined) && priority === undefined) {
    throw new SluiceError('INVALID_OPTION', 'trafficStack: priority must be a function (req) => class when fleet or worker is given');
  }
  if (concurrency !== undefined && concurrency.identify === undefined && rate === undefined) {
    throw new SluiceError('INVALID_OPTION', 'trafficStack: concurrency needs identify (req) => client, or a rate layer whose identity it can use');
  }
  const rateLayer = rate === undefined ? undefined : rateLimit<Req>(rate);
  if (rateLayer !== undefined && concurrency === undefined && fleet === undefined && worker === undefined) return rateOnly(rateLayer);

  return function sluiceTrafficStack(req, res, next) {
    const request = req as Req & { trafficStack?: TrafficStackInfo; rateLimit?: { identity?: string } };
    const leases: Lease[] = [];
    let released = false;
    const release = (): void => {
      if (released) return;
      released = true;
      for (const lease of leases) void lease.release();
    };
    /**
     * Keeps a lease for the request until its response ends, however it ends: 'finish' when it was sent, 'close' when
     * the connection went first (an aborted client, a timeout) and after 'finish' too (release is idempotent). The
     * listeners are added with the first lease only; a response that already ended gives the lease back at once.
     */
    const hold = (lease: Lease | undefined): void => {
      if (lease === undefined) return;
      if (released || res.writableEnded || res.destroyed) {
        void lease.release();
        return;
      }
      if (leases.length === 0) {
        res.once('finish', release);
        res.once('close', release);
      }
      leases.push(lease);
    };
    const refuse = (layer: StackLayer, kind: RefusalKind, policy: string, retryAfterMs: number, cls: string | undefined): void => {
      release();
      request.trafficStack = { refusedBy: layer, priority: cls };
      const retryAfterSeconds = Math.max(1, Math.ceil(retryAfterMs / 1000));
      res.statusCode = kind === 'shed' ? 503 : 429;
      res.setHeader('Retry-After', String(retryAfterSeconds));
      res.setHeader('Content-Type', PROBLEM_CONTENT_TYPE);
      res.end(JSON.stringify({ ...problemFor({ kind, policy, retryAfterSeconds }), refusedBy: layer }));
    };
    const afterRate = async (): Promise<void> => {
      const cls = priority === undefined ? undefined : priority(request);
      if (concurrency !== undefined) {
        const identity = concurrency.identify?.(request) ?? request.rateLimit?.identity;
        if (identity !== undefined) {
          const d = await concurrency.limiter.acquire(identity);
          if (!d.allowed) return refuse('concurrency', 'limited', concurrency.limiter.name, d.retryAfter, cls);
          hold(d.lease);
        }
      }
      if (fleet !== undefined) {
        const d = await fleet.acquire(cls!);
        if (!d.allowed) return refuse('fleet', 'shed', 'fleet', d.retryAfter, cls);
        hold(d.lease);
      }
      if (worker !== undefined) {
        const d = worker.check(cls!);
        if (!d.allowed) return refuse('worker', 'shed', 'worker', d.retryAfter, cls);
      }
      request.trafficStack = { refusedBy: undefined, priority: cls };
      next();
    };
    const run = (): void => {
      afterRate().catch((error: unknown) => {
        release();
        next(error);
      });
    };
    if (rateLayer === undefined) {
      run();
      return;
    }
    // Until the rate layer lets the request on, a refusal is its own (it answers the refusal itself).
    request.trafficStack = { refusedBy: 'rate', priority: undefined };
    rateLayer(req, res, (error?: unknown) => {
      if (error !== undefined) {
        next(error);
        return;
      }
      request.trafficStack = { refusedBy: undefined, priority: undefined };
      run();
    });
  };
}
