/**
 * trafficStackPlugin on a real Fastify server with real clients, after rateLimitPlugin when a rate layer is asked for:
 * the adapters' shared traffic stack suite (test/harness/adapter-traffic-stack.ts).
 */
import Fastify, { type FastifyRequest } from 'fastify';
import { describeAdapterTrafficStack } from '../../../../test/harness/adapter-traffic-stack.js';
import { rateLimitPlugin, trafficStackPlugin } from '../src/index.js';

describeAdapterTrafficStack<FastifyRequest>({
  name: 'fastify',
  create: async (options) => {
    const instance = Fastify();
    try {
      await instance.register(trafficStackPlugin, options);
    } finally {
      await instance.close();
    }
  },
  header: (request, name) => request.headers[name] as string | undefined,
  loopbackIdentity: 'ip:127.0.0.1',
  rateLayer: 'separate',
  reportsInfo: true,
  serve: async ({ stack, rate, hold }) => {
    const instance = Fastify();
    if (rate !== undefined) await instance.register(rateLimitPlugin, { limiter: rate });
    await instance.register(trafficStackPlugin, stack);
    instance.get('/fast', async (request) => ({ ok: true, stack: request.trafficStack }));
    instance.get('/slow', async () => {
      await hold();
      return { ok: true };
    });
    instance.get('/throw', async () => {
      throw new Error('handler failed');
    });
    await instance.listen({ port: 0, host: '127.0.0.1' });
    return { port: (instance.server.address() as { port: number }).port, close: () => instance.close() };
  },
});
