import type { IncomingMessage, ServerResponse } from 'node:http';
import { createHandler, type HandleResult, type HttpLimitOptions } from '@sluice/http';
import { addressLost, nodeHeaderTarget, writeHeaders } from '@sluice/http/adapter';

/** What the middleware leaves on `req.rateLimit`: the handler's whole answer (decision, identity, headers). */
export type RateLimitInfo = HandleResult;

declare global {
  // Express declares its Request inside this global namespace so that middleware can add fields to it.
  // eslint-disable-next-line @typescript-eslint/no-namespace
  namespace Express {
    interface Request {
      /** Set by @sluice/express: the last sluice middleware's answer for this request. */
      rateLimit?: RateLimitInfo;
    }
  }
}

/** The request hooks receive: Express's (with whatever auth middleware added, such as `req.user`). */
export type ExpressRequest = IncomingMessage & Express.Request;

/** Every option of @sluice/http's handler; hooks receive the Express request. */
export type ExpressRateLimitOptions<Req extends IncomingMessage = ExpressRequest> = HttpLimitOptions<Req>;

export type RateLimitMiddleware = (req: IncomingMessage, res: ServerResponse, next: (error?: unknown) => void) => void;

/**
 * Express 4 and 5 middleware. Use it app-wide (`app.use(rateLimit({...}))`) or per route
 * (`app.post('/login', rateLimit({ limiter: loginLimiter }), handler)`); several on one request add their
 * RateLimit items. An allowed request continues with `req.rateLimit` set; a refused one is answered here
 * (429/503/413 problem+json with RateLimit and Retry-After headers). Errors from hooks go to `next(error)`.
 * @example app.use(rateLimit({ limiter, identify: (req) => req.user?.id }))
 */
export function rateLimit<Req extends IncomingMessage = ExpressRequest>(options: ExpressRateLimitOptions<Req>): RateLimitMiddleware {
  const handler = createHandler<Req>(options);
  return function sluiceRateLimit(req, res, next) {
    let pending: HandleResult | Promise<HandleResult>;
    try {
      const socket = req.socket;
      const remoteAddress = socket?.remoteAddress;
      // A client that reset its connection has no address any more: refused, never "unidentified" and let through.
      const connectionLost = remoteAddress === undefined && addressLost(socket);
      pending = handler.run({ headers: req.headers, remoteAddress, connectionLost, method: req.method, url: req.url }, req as Req);
    } catch (error) {
      next(error);
      return;
    }
    if (pending instanceof Promise) {
      pending.then((result) => respond(req, res, next, result), next);
    } else {
      respond(req, res, next, pending);
    }
  };
}

function respond(req: IncomingMessage, res: ServerResponse, next: (error?: unknown) => void, result: HandleResult): void {
  // The first sluice middleware on a request has nothing to merge with: it only sets.
  const first = (req as IncomingMessage & { rateLimit?: RateLimitInfo }).rateLimit === undefined;
  (req as IncomingMessage & { rateLimit?: RateLimitInfo }).rateLimit = result;
  if (res.headersSent) {
    // Something answered while an asynchronous store was deciding; there is nothing left to add to.
    if (result.allowed) next();
    return;
  }
  if (first) {
    // Nothing to merge with: every field is set as it comes (what writeHeaders does on an empty response).
    for (const field of result.headers) res.setHeader(field.name, field.value);
  } else {
    writeHeaders(
      result.headers,
      nodeHeaderTarget(
        (name) => res.getHeader(name),
        (name, value) => res.setHeader(name, value),
      ),
    );
  }
  if (result.allowed) {
    next();
    return;
  }
  res.statusCode = result.status;
  res.end(result.body);
}
