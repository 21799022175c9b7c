// One benchmark server, in its own process so it has a core to itself while autocannon drives it from the
// parent. Usage: node server.mjs <variant>. Prints `{ "port": N }` once listening; runs until killed.
// Every variant answers GET / with the same small JSON body; the limited ones allow far more than the run sends.
import { createLimiter, fixedWindow } from '@sluice/core';
import { memoryStore } from '@sluice/memory';
import { rateLimit as sluiceExpress } from '@sluice/express';
import { rateLimitPlugin as sluiceFastify } from '@sluice/fastify';
import fastifyRateLimit from '@fastify/rate-limit';
import express from 'express';
import expressRateLimit from 'express-rate-limit';
import Fastify from 'fastify';

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
];

// High enough that nothing is refused during a run (one client address, a few hundred thousand requests).
const LIMIT = 1_000_000_000;
const WINDOW_MS = 60_000;
const BODY = { hello: 'world' };

function sluiceLimiter() {
  return createLimiter({ name: 'bench', store: memoryStore(), rules: fixedWindow({ limit: LIMIT, window: WINDOW_MS }) });
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
    app.get('/', (_req, res) => {
      res.json(BODY);
    });
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
