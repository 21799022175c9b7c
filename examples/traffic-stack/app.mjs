// The application: an Express 5 API behind the four limiters of the article 'Scaling your API with rate limiters',
// as one trafficStack() middleware on Redis. Everything about limiting and shedding is in this file; server.mjs runs
// it in its own process and start.mjs sends it traffic.
import express from 'express';
import { createLimiter, tokenBucket } from '@sluice/core';
import { createConcurrencyLimiter } from '@sluice/core/concurrency';
import { createFleetShedder, createUtilizationShedder } from '@sluice/core/shedding';
import { trafficStack } from '@sluice/express';
import { redisStore } from '@sluice/redis';

/** CPU time each admitted request spends in the handler (a busy loop: the event loop is really busy). */
export const WORK_MS = 6;

/** The article's four classes, most important first: critical methods, POSTs, GETs, test-mode traffic. */
export const CLASSES = ['critical', 'write', 'read', 'test'];

/**
 * The request's class. Test-mode API keys (`sk_test_…`, as Stripe's) are test traffic whatever they call; for live
 * keys, creating a charge is critical, other POSTs are writes, GETs are reads. The class comes from what the
 * client is allowed to do (its key) and what it calls, never from a header it could set to "critical".
 */
export function priorityOf(req) {
  if (req.get('x-api-key')?.startsWith('sk_test_')) return 'test';
  if (req.method === 'POST' && req.path === '/charges') return 'critical';
  return req.method === 'GET' || req.method === 'HEAD' ? 'read' : 'write';
}

/** @param {import('ioredis').Redis} redis  the app's own client; the stores never change or close it */
export function createApp(redis) {
  // One Redis store for all three shared layers. Concurrency and fleet usage count leases (a slot held until the
  // response ends, freed by itself after its ttl if the process holding it dies) in a sorted set per identity, so
  // every instance of the app sees the same counts.
  const store = redisStore(redis);

  // 1. Request rate per API key (429): bursts of 20, 10 per second. A script that has gotten out of hand is
  // stopped here, before it costs anything else.
  const rate = createLimiter({ name: 'rate', store, rules: tokenBucket({ capacity: 20, refillRate: 10 }) });
  // 2. Requests in flight per API key (429): at most 6 at once. "Fork off X jobs", not "hammer and back off".
  const concurrency = createConcurrencyLimiter({ name: 'in-flight', store, limit: 6, ttl: '30s' });
  // 3. Fleet usage (503): at most 30 requests in flight across all instances, 40% kept for critical work:
  // critical may use all 30, write 26, read 22, test 18.
  const fleet = createFleetShedder({ store, capacity: 30, reserve: 0.4, ttl: '30s' });
  // 4. Worker utilization (503): this process's event loop (utilization and delay, the default signal). Timings
  // short enough to watch in a demo (the defaults are 28 s before the first shed and 120 s to shed all but
  // critical): 1 s of saturation before anything is shed, then 4 s from shedding nothing to shedding everything
  // but critical (test first, then read, then write), and as slowly back.
  const worker = createUtilizationShedder({ classes: CLASSES, delay: '1s', rampUp: '4s', sampleEvery: '250ms' });

  const app = express();
  app.disable('x-powered-by');
  app.disable('etag');
  app.get('/health', (_req, res) => res.json({ ok: true })); // before the stack: never limited

  // For the chart: the worker shedder's amount when the request arrived (below 0 at rest, 1 sheds all but critical).
  app.use((_req, res, next) => {
    res.setHeader('x-worker-shedding', worker.amount.toFixed(3));
    next();
  });
  app.use(
    trafficStack({
      rate: { limiter: rate, identify: (req) => req.get('x-api-key') },
      concurrency: { limiter: concurrency },
      fleet,
      worker,
      priority: priorityOf,
    }),
  );

  const work = (req, res) => {
    const end = performance.now() + WORK_MS;
    while (performance.now() < end); // the real work: CPU, on the event loop
    res.json({ ok: true, class: req.trafficStack?.priority });
  };
  app.post('/charges', work);
  app.get('/charges', work);
  app.post('/customers', work);

  return { app, close: () => worker.close() };
}
