// One app process of the fleet: a plain node:http server rate limited through @sluice/tiered in front of one shared
// Redis. start.mjs starts four of these (child_process.fork) with TIER_STRATEGY, REDIS_PORT and APP_NAME in the
// environment. Everything about rate limiting is in this file.
//
// Per request: the identity comes from the x-client-id header; 200 if the limiter allows it, 429 if not. The process
// also keeps a tally for the demo (what it admitted, per identity and per window) and reports it with
// tier.stats() when start.mjs asks it to close.
import { createServer } from 'node:http';
import { Redis } from 'ioredis';
import { createLimiter, fixedWindow } from '@sluice/core';
import { redisStore } from '@sluice/redis';
import { tieredStore } from '@sluice/tiered';

/** The rule every process enforces together: 100 requests per identity per 1 s window, fleet-wide. */
export const LIMIT = 100;
export const WINDOW_MS = 1000;
/** How many processes share Redis: the tier's fallback share while Redis is down is LIMIT ÷ INSTANCES each. */
export const INSTANCES = 4;

const strategy = process.env.TIER_STRATEGY ?? 'deny-cache';
const name = process.env.APP_NAME ?? 'app';
const redisPort = Number(process.env.REDIS_PORT);

// Each process has its own client and its own tier; only Redis is shared.
const redis = new Redis({ host: '127.0.0.1', port: redisPort, lazyConnect: true, enableOfflineQueue: false, maxRetriesPerRequest: 0 });
await redis.connect();
const tier = tieredStore({
  remote: redisStore(redis),
  instances: INSTANCES,
  strategy,
  // lease: batches of at most 25 units, so four processes share a window of 100 instead of one process taking it all.
  lease: { maxBatch: 25 },
  // async: counts are flushed to Redis every 10 local admissions; each process admits at most 20 that Redis has
  // not counted yet, so the fleet may over-admit by up to INSTANCES × 20 per window.
  async: { flushEvery: 10, maxUnsynced: 20 },
  // Deadlines twice the defaults (150 ms for the tier, 250 ms for the limiter): this demo runs four apps, the proxy,
  // the load and Redis on one machine, and a Redis call that misses its deadline is answered from the local share
  // (marked degraded, or refused in the window a failure began in), which is not what it sets out to show. Keep the
  // tier's below the limiter's.
  timeout: '300ms',
});
// A limiter name per strategy: each run starts on keys of its own in the same Redis.
const limiter = createLimiter({
  name: `fleet-${strategy}`,
  store: tier,
  rules: fixedWindow({ limit: LIMIT, window: WINDOW_MS }),
  timeout: '500ms',
});

/** identity -> { admitted, limited }; and, per identity, window start (Redis clock) -> admitted. */
const tally = new Map();
const perWindow = new Map();
let degraded = 0;

const server = createServer(async (req, res) => {
  const identity = req.headers['x-client-id'];
  if (typeof identity !== 'string' || identity === '') {
    res.writeHead(400, { 'content-type': 'text/plain' }).end('send x-client-id\n');
    return;
  }
  let decision;
  try {
    decision = await limiter.limit(identity);
  } catch (error) {
    console.error(`${name}: limiter.limit(${identity}) threw: ${error?.stack ?? error}`);
    res.writeHead(500, { 'content-type': 'text/plain' }).end('limiter error\n');
    return;
  }
  const t = tally.get(identity) ?? { admitted: 0, limited: 0 };
  tally.set(identity, t);
  if (decision.degraded) degraded++;
  if (decision.allowed) {
    t.admitted++;
    // decision.now is on Redis's clock (the tier adds its offset to local answers): the window it was admitted in.
    const windowStart = Math.floor(decision.now / WINDOW_MS) * WINDOW_MS;
    const windows = perWindow.get(identity) ?? new Map();
    perWindow.set(identity, windows);
    windows.set(windowStart, (windows.get(windowStart) ?? 0) + 1);
    res.writeHead(200, { 'content-type': 'text/plain', 'x-served-by': name }).end(`ok ${identity} (${name})\n`);
  } else {
    t.limited++;
    const retryAfter = Math.max(1, Math.ceil(decision.retryAfter / 1000));
    res
      .writeHead(429, { 'content-type': 'text/plain', 'retry-after': String(retryAfter), 'x-served-by': name })
      .end(`limited ${identity} (${name})\n`);
  }
});
server.keepAliveTimeout = 2000;
server.listen(0, '127.0.0.1', () => {
  process.send({ type: 'ready', name, port: server.address().port, strategy, limit: LIMIT, windowMs: WINDOW_MS, instances: INSTANCES });
});

process.on('message', async (message) => {
  if (message?.type !== 'close') return;
  server.closeAllConnections();
  await new Promise((resolve) => server.close(resolve));
  // Gives back what is left of leased batches and counts in Redis what async admitted locally, before Redis goes.
  await tier.close();
  const report = {
    type: 'report',
    name,
    tally: Object.fromEntries(tally),
    perWindow: Object.fromEntries([...perWindow].map(([identity, windows]) => [identity, Object.fromEntries(windows)])),
    degraded,
    stats: tier.stats(),
  };
  await redis.quit();
  // Nothing is left to keep the process alive (the tier's timer is unref'd): it exits by itself once the channel closes.
  process.send(report, () => process.disconnect());
});
