// One benchmark server, in its own process so it has a core to itself while autocannon drives it from the
// parent. Usage: node server.mjs <variant>. Prints `{ "port": N }` once listening; runs until killed.
// Every variant answers GET / with the same small JSON body; the limited ones allow far more than the run sends.
import { createLimiter, fixedWindow } from '@sluice/core';
import { createConcurrencyLimiter } from '@sluice/core/concurrency';
import { createFleetShedder, createUtilizationShedder, createEventLoopSignal } from '@sluice/core/shedding';
import { memoryStore } from '@sluice/memory';
import { rateLimit as sluiceExpress, trafficStack } from '@sluice/express';
import { rateLimitPlugin as sluiceFastify } from '@sluice/fastify';
import fastifyRateLimit from '@fastify/rate-limit';
import express from 'express';
import expressRateLimit from 'express-rate-limit';
import Fastify from 'fastify';

// `express+stack(…)` variants run only with --stack: trafficStack with the named layers on one memory store, added
// one at a time, to show what each layer costs per request (and that `stack(rate)` costs what rateLimit alone does).
export const STACK_VARIANTS = [
  'express+stack(rate)',
  'express+stack(rate,concurrency)',
  'express+stack(rate,concurrency,fleet)',
  'express+stack(all four)',
];

// `… (no headers)` variants run only with --headers-off: the same limiter with `headers: false`, to show how
// much of the cost is the two response header fields rather than the decision.
export const VARIANTS = [
  'express',
  'express+sluice',
  'express+express-rate-limit',
  'fastify',
  'fastify+sluice',
  'fastify+@fastify/rate-limit',
  'express+sluice (no headers)',
  'fastify+sluice (no headers)',
  ...STACK_VARIANTS,
];

// High enough that nothing is refused during a run (one client address, a few hundred thousand requests).
const LIMIT = 1_000_000_000;
const WINDOW_MS = 60_000;
const BODY = { hello: 'world' };

function sluiceLimiter() {
  return createLimiter({ name: 'bench', store: memoryStore(), rules: fixedWindow({ limit: LIMIT, window: WINDOW_MS }) });
}

/**
 * Puts trafficStack with the variant's layers on `app` (one memory store for all of them; limits and capacity far
 * above what a run sends; the worker shedder with its default thresholds) and returns the handler of GET /probe,
 * which shows each layer at work on the probe request itself:
 * - rate: `identity`, the identity the rate layer resolved (`req.rateLimit`), and the RateLimit header;
 * - `trafficStack`: what the stack left on the request (only trafficStack sets `req.trafficStack`);
 * - concurrency: `concurrencyHeld`, the limiter's own count of leases held for this client after the probe takes
 *   one more (then releases it): 2 while the stack holds this request's lease, 1 if it took none, more if leases leaked;
 * - fleet: `fleetHeld`, the same for the fleet-wide key (taken as 'critical', the class that may fill the capacity);
 * - worker: `workerSignalReads`, how often the shedder read its signal (the default one, createEventLoopSignal(), counted
 *   on the way: it is read at most once a second, so the count costs nothing per request), which only its check()
 *   does; `workerAmount` (below 0 is at rest; 'read' is shed from 1/3) and `workerUtilization`, the last sample.
 */
function useStack(app, variant) {
  const layers =
    variant === 'express+stack(all four)'
      ? ['rate', 'concurrency', 'fleet', 'worker']
      : variant.slice('express+stack('.length, -1).split(',');
  const store = memoryStore();
  const options = { rate: { limiter: createLimiter({ name: 'bench', store, rules: fixedWindow({ limit: LIMIT, window: WINDOW_MS }) }) } };
  if (layers.includes('concurrency'))
    options.concurrency = { limiter: createConcurrencyLimiter({ name: 'bench-inflight', store, limit: LIMIT }) };
  if (layers.includes('fleet')) options.fleet = createFleetShedder({ store, capacity: LIMIT });
  let signalReads = 0;
  if (layers.includes('worker')) {
    const eventLoop = createEventLoopSignal();
    options.worker = createUtilizationShedder({
      signal: () => {
        signalReads += 1;
        return eventLoop();
      },
    });
  }
  // The class every bench request is given: GET is a read. Only with fleet or worker (the stack calls it only then).
  if (options.fleet !== undefined || options.worker !== undefined) options.priority = () => 'read';
  app.use(trafficStack(options));
  return async (req, res) => {
    const identity = req.rateLimit?.identity;
    const out = { identity, trafficStack: req.trafficStack };
    if (options.concurrency !== undefined) {
      const d = await options.concurrency.limiter.acquire(identity);
      out.concurrencyHeld = d.held;
      await d.lease?.release();
    }
    if (options.fleet !== undefined) {
      const d = await options.fleet.acquire('critical');
      out.fleetHeld = d.held;
      await d.lease?.release();
    }
    if (options.worker !== undefined) {
      out.workerSignalReads = signalReads;
      const d = options.worker.check('critical');
      out.workerAmount = d.amount;
      out.workerUtilization = d.utilization;
    }
    res.json(out);
  };
}

async function start(variant) {
  if (variant.startsWith('express')) {
    const app = express();
    app.disable('x-powered-by');
    if (variant === 'express+sluice') app.use(sluiceExpress({ limiter: sluiceLimiter() }));
    if (variant === 'express+sluice (no headers)') app.use(sluiceExpress({ limiter: sluiceLimiter(), headers: false }));
    // The same header output as sluice's default: the draft RateLimit and RateLimit-Policy fields only.
    if (variant === 'express+express-rate-limit') {
      app.use(expressRateLimit({ windowMs: WINDOW_MS, limit: LIMIT, standardHeaders: 'draft-8', legacyHeaders: false }));
    }
    const probe = STACK_VARIANTS.includes(variant) ? useStack(app, variant) : undefined;
    app.get('/', (_req, res) => {
      res.json(BODY);
    });
    // After `/`, so the timed route never reaches it.
    if (probe !== undefined) app.get('/probe', probe);
    return new Promise((resolve) => {
      const server = app.listen(0, '127.0.0.1', () => resolve(server.address().port));
    });
  }
  const app = Fastify({ logger: false });
  if (variant === 'fastify+sluice') await app.register(sluiceFastify, { limiter: sluiceLimiter() });
  if (variant === 'fastify+sluice (no headers)') await app.register(sluiceFastify, { limiter: sluiceLimiter(), headers: false });
  if (variant === 'fastify+@fastify/rate-limit') await app.register(fastifyRateLimit, { max: LIMIT, timeWindow: WINDOW_MS });
  app.get('/', async () => BODY);
  await app.listen({ port: 0, host: '127.0.0.1' });
  return app.server.address().port;
}

const variant = process.argv[2];
if (!VARIANTS.includes(variant)) {
  console.error(`server.mjs: unknown variant ${JSON.stringify(variant)}; one of ${VARIANTS.join(', ')}`);
  process.exit(2);
}
const port = await start(variant);
process.stdout.write(`${JSON.stringify({ port })}\n`);
