import { checkStackLayers, heldUntilEnd, nodeHeaderTarget, runStackLayers, writeHeaders, type StackLayers } from '@sluice/http/adapter';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import fp from 'fastify-plugin';

/**
 * The layers after the request rate, in the order of the article 'Scaling your API with rate limiters'; the rate
 * layer is `rateLimitPlugin`, registered first.
 */
export type FastifyStackLayer = 'concurrency' | 'fleet' | 'worker';

/** The layers after the request rate: concurrency (429), fleet usage (503), worker utilization (503). */
export type FastifyTrafficStackOptions = StackLayers<FastifyRequest>;

declare module 'fastify' {
  interface FastifyRequest {
    /** Set by @sluice/fastify's trafficStackPlugin: the layer that refused the request, and its priority class. */
    trafficStack: { refusedBy: FastifyStackLayer | undefined; priority: string | undefined } | null;
  }
}

function register(fastify: FastifyInstance, options: FastifyTrafficStackOptions): void {
  // The rate layer is rateLimitPlugin, registered on its own: the client for concurrency defaults to the identity
  // it resolved; without that plugin, identify.
  const { layers } = checkStackLayers(options, { where: 'trafficStackPlugin', example: '{ concurrency: { limiter } }', rateOption: false });
  fastify.decorateRequest('trafficStack', null);

  fastify.addHook('onRequest', async function sluiceTrafficStack(request, reply) {
    // A refusal by rateLimitPlugin (registered before) has answered already.
    if (reply.sent) return;
    // Leases go back when the raw response ends, however it ends: sent, a client that went away (onRequestAbort),
    // an error reply (onError, then onResponse).
    const leases = heldUntilEnd(reply.raw);
    const { priority, refusal } = await runStackLayers(layers, request, request.rateLimit?.identity, leases.hold);
    request.trafficStack = { refusedBy: refusal?.layer as FastifyStackLayer | undefined, priority };
    if (refusal === undefined) return;
    leases.release();
    // Merged onto what rateLimitPlugin wrote, so its RateLimit items agree with this Retry-After.
    writeHeaders(
      refusal.fields,
      nodeHeaderTarget(
        (name) => reply.getHeader(name),
        (name, value) => void reply.header(name, value),
      ),
    );
    return reply.code(refusal.status).send(refusal.body);
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
 * The concurrency limiter and load shedders of the article 'Scaling your API with rate limiters' as a Fastify
 * plugin, after the request rate: register `rateLimitPlugin` first, then this one. Refusals are 429 (concurrency) or
 * 503 (fleet, worker) problem+json with Retry-After and `refusedBy`; leases are released when the response ends,
 * however it ends.
 * @example
 * await app.register(rateLimitPlugin, { limiter });
 * await app.register(trafficStackPlugin, { concurrency: { limiter: inFlight }, fleet, worker, priority: (req) => (req.method === 'GET' ? 'read' : 'write') });
 */
export const trafficStackPlugin = fp(sluiceTrafficStack, { fastify: '5.x', name: '@sluice/fastify/traffic-stack' });
