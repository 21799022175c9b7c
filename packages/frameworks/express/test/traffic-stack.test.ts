/**
 * trafficStack() on a real Express server with real clients: the adapters' shared traffic stack suite
 * (test/harness/adapter-traffic-stack.ts).
 */
import express from 'express';
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { describeAdapterTrafficStack } from '../../../../test/harness/adapter-traffic-stack.js';
import { trafficStack, type ExpressRequest, type TrafficStackOptions } from '../src/index.js';

describeAdapterTrafficStack<ExpressRequest>({
  name: 'express',
  create: (options) => trafficStack(options),
  header: (req, name) => req.headers[name] as string | undefined,
  loopbackIdentity: 'ip:127.0.0.1',
  rateLayer: 'option',
  reportsInfo: true,
  serve: async ({ stack, rate, hold }) => {
    const application = express();
    const options: TrafficStackOptions = rate === undefined ? stack : { ...stack, rate: { limiter: rate } };
    application.use(trafficStack(options));
    application.get('/fast', (req, res) => void res.json({ ok: true, stack: req.trafficStack }));
    application.get('/slow', async (_req, res) => {
      await hold();
      res.json({ ok: true });
    });
    application.get('/throw', () => {
      throw new Error('handler failed');
    });
    application.use(
      (error: Error, _req: express.Request, res: express.Response, _next: express.NextFunction) =>
        void res.status(500).json({ error: error.message }),
    );
    const server = await new Promise<Server>((resolve) => {
      const listening = application.listen(0, '127.0.0.1', () => resolve(listening));
    });
    return {
      port: (server.address() as AddressInfo).port,
      close: () => {
        server.closeAllConnections();
        return new Promise<void>((resolve) => server.close(() => resolve()));
      },
    };
  },
});
