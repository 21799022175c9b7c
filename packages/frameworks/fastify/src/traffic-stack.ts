import { optionalFunction, rejectUnknownOptions } from '@sluice/core/store';
import { SluiceError, type ConcurrencyLimiter, type FleetShedder, type Lease, type UtilizationShedder } from '@sluice/core';
import { PROBLEM_CONTENT_TYPE, problemFor, type RefusalKind } from '@sluice/http';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import fp from 'fastify-plugin';

/** The layers after the request rate, in seed 000's order; the rate layer is `rateLimitPlugin`, registered first. */
export type FastifyStackLayer = 'concurrency' | 'fleet' | 'worker';

export interface FastifyTrafficStackOptions {
  /** Requests in flight per client (429); the lease is held until the response ends, however it ends. */
  concurrency?: {
    limiter: ConcurrencyLimiter;
    /** The client. Default: the identity `rateLimitPlugin` resolved for the request (register it first). */
    identify?: (request: FastifyRequest) => string | undefined;
  };
  /** Fleet-wide in-flight work with a reserve for critical classes (503). */
  fleet?: FleetShedder;
  /** This process's utilization (503). */
  worker?: UtilizationShedder;
  /** The request's priority class for `fleet` and `worker`. Required with either. */
  priority?: (request: FastifyRequest) => string;
}

declare module 'fastify' {
  interface FastifyRequest {
    /** Set by @sluice/fastify's trafficStackPlugin: the layer that refused the request, and its priority class. */
    trafficStack: { refusedBy: FastifyStackLayer | undefined; priority: string | undefined } | null;
  }
}

const KNOWN = ['concurrency', 'fleet', 'worker', 'priority'];

function register(fastify: FastifyInstance, options: FastifyTrafficStackOptions): void {
  if (typeof options !== 'object' || options === null) {
    throw new SluiceError('INVALID_OPTION', 'trafficStackPlugin: options must be an object such as { concurrency: { limiter } }');
  }
  rejectUnknownOptions(options, KNOWN, 'trafficStackPlugin');
  const { concurrency, fleet, worker, priority } = options;
  optionalFunction(priority, 'trafficStackPlugin: priority', '(request) => class');
  if ((fleet !== undefined || worker !== undefined) && priority === undefined) {
    throw new SluiceError('INVALID_OPTION', 'trafficStackPlugin: priority must be a function (request) => class when fleet or worker is given');
  }
  fastify.decorateRequest('trafficStack', null);

  const refuse = (request: FastifyRequest, reply: FastifyReply, layer: FastifyStackLayer, kind: RefusalKind, policy: string, retryAfterMs: number, cls: string | undefined) => {
    request.trafficStack = { refusedBy: layer, priority: cls };
    const retryAfterSeconds = Math.max(1, Math.ceil(retryAfterMs / 1000));
    return reply
      .code(kind === 'shed' ? 503 : 429)
      .header('Retry-After', String(retryAfterSeconds))
      .header('Content-Type', PROBLEM_CONTENT_TYPE)
      .send(JSON.stringify({ ...problemFor({ kind, policy, retryAfterSeconds }), refusedBy: layer }));
  };

  fastify.addHook('onRequest', async function sluiceTrafficStack(request, reply) {
    // A refusal by rateLimitPlugin (registered before) has answered already.
    if (reply.sent) return;
    const leases: Lease[] = [];
    let released = false;
    const release = (): void => {
      if (released) return;
      released = true;
      for (const lease of leases) void lease.release();
    };
    /**
     * Keeps a lease for the request until its response ends, however it ends, including a client that went away
     * (onRequestAbort) and an error reply (onError, then onResponse): the raw response's 'finish' and 'close'
     * (release is idempotent). The listeners are added with the first lease; a response that already ended gives
     * the lease back at once.
     */
    const hold = (lease: Lease | undefined): void => {
      if (lease === undefined) return;
      if (released || reply.raw.writableEnded || reply.raw.destroyed) {
        void lease.release();
        return;
      }
      if (leases.length === 0) {
        reply.raw.once('finish', release);
        reply.raw.once('close', release);
      }
      leases.push(lease);
    };
    const cls = priority === undefined ? undefined : priority(request);
    if (concurrency !== undefined) {
      const identity = concurrency.identify?.(request) ?? request.rateLimit?.identity;
      if (identity !== undefined) {
        const d = await concurrency.limiter.acquire(identity);
        if (!d.allowed) {
          release();
          return refuse(request, reply, 'concurrency', 'limited', concurrency.limiter.name, d.retryAfter, cls);
        }
        hold(d.lease);
      }
    }
    if (fleet !== undefined) {
      const d = await fleet.acquire(cls!);
      if (!d.allowed) {
        release();
        return refuse(request, reply, 'fleet', 'shed', 'fleet', d.retryAfter, cls);
      }
      hold(d.lease);
    }
    if (worker !== undefined) {
      const d = worker.check(cls!);
      if (!d.allowed) {
        release();
        return refuse(request, reply, 'worker', 'shed', 'worker', d.retryAfter, cls);
      }
    }
    request.trafficStack = { refusedBy: undefined, priority: cls };
  });
}

function sluiceTrafficStack(fastify: FastifyInstance, options: FastifyTrafficStackOptions, done: (error?: Error) => void): void {
  try {
    register(fastify, options);
  } catch (error) {
    done(error as Error);
    return;
  }
  done();
}

/**
 * Seed 000's concurrency limiter and load shedders as a Fastify plugin, after the request rate: register
 * `rateLimitPlugin` first, then this one. Refusals are 429 (concurrency) or 503 (fleet, worker) problem+json with
 * Retry-After and `refusedBy`; leases are released when the response ends, however it ends.
 * @example
 * await app.register(rateLimitPlugin, { limiter });
 * await app.register(trafficStackPlugin, { concurrency: { limiter: inFlight }, fleet, worker, priority: (req) => (req.method === 'GET' ? 'read' : 'write') });
 */
export const trafficStackPlugin = fp(sluiceTrafficStack, { fastify: '5.x', name: '@sluice/fastify/traffic-stack' });
