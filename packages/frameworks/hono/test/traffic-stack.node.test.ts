/**
 * trafficStack() on a real @hono/node-server with real clients, c.get('trafficStack') included: the adapters' shared
 * traffic stack suite (test/harness/adapter-traffic-stack.ts).
 */
import { serve, type ServerType } from '@hono/node-server';
import { Hono, type Context } from 'hono';
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { describeAdapterTrafficStack } from '../../../../test/harness/adapter-traffic-stack.js';
import { trafficStack, type HonoTrafficStackOptions } from '../src/index.js';

describeAdapterTrafficStack<Context>({
  name: 'hono',
  create: (options) => trafficStack(options),
  header: (c, name) => c.req.header(name),
  loopbackIdentity: 'ip:127.0.0.1',
  rateLayer: 'option',
  reportsInfo: true,
  serve: async ({ stack, rate, hold }) => {
    const options: HonoTrafficStackOptions = rate === undefined ? stack : { ...stack, rate: { limiter: rate } };
    const application = new Hono();
    application.use(trafficStack(options));
    application.get('/fast', (c) => c.json({ ok: true, stack: c.get('trafficStack') }));
    application.get('/slow', async (c) => {
      await hold();
      return c.json({ ok: true });
    });
    application.get('/throw', () => {
      throw new Error('route failed');
    });
    application.onError((error, c) => c.json({ error: error.message }, 500));
    const server = await new Promise<ServerType>((resolve) => {
      const started = serve({ fetch: application.fetch, port: 0, hostname: '127.0.0.1' }, () => resolve(started));
    });
    return {
      port: (server.address() as AddressInfo).port,
      close: () => {
        (server as Server).closeAllConnections();
        return new Promise<void>((resolve) => server.close(() => resolve()));
      },
    };
  },
});
