// One OS process of the leases test: its own ioredis connection and concurrency limiter (Redis TIME), all on the
// one identity the parent names. `run`: `inFlight` lanes acquire, hold a few ms and release (or, refused, wait a
// few ms), and report which lease ids were granted and released (the parent replays them in the server's order).
// `hold`: acquires leases and never releases them (the parent then kills this process with SIGKILL).
import { Redis } from 'ioredis';
import { createConcurrencyLimiter } from '@sluice/core/concurrency';
import { redisStore } from '@sluice/redis';

const [port] = process.argv.slice(2);
const client = new Redis({ host: '127.0.0.1', port: Number(port) });
const store = redisStore(client);
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

function limiter(message) {
  // A generous deadline and fail-closed: a slow machine must not turn into extra grants, and errors are counted.
  return createConcurrencyLimiter({
    store,
    limit: message.limit,
    ttl: message.ttl,
    name: message.name,
    timeout: 30_000,
    circuitBreaker: false,
    onStoreError: 'deny',
  });
}

process.on('message', async (message) => {
  if (message.type === 'stop') {
    client.disconnect();
    process.disconnect();
    return;
  }
  const inFlight = limiter(message);
  if (message.type === 'hold') {
    const held = [];
    for (let i = 0; i < message.count; i++) {
      const decision = await inFlight.acquire(message.identity);
      if (decision.allowed && !decision.degraded)
        held.push({ id: decision.lease.id, expiresAt: decision.lease.expiresAt, now: decision.now });
    }
    process.send({ type: 'holding', held });
    return; // never released: the parent kills this process
  }
  let issued = 0;
  const report = { granted: [], released: [], refused: 0, degraded: 0, maxHeld: 0, releaseFailed: 0 };
  const lane = async () => {
    while (issued < message.requests) {
      issued++;
      const decision = await inFlight.acquire(message.identity);
      if (decision.degraded) report.degraded++;
      else if (!decision.allowed) {
        report.refused++;
        await sleep(Math.floor(Math.random() * (message.holdMs + 1))); // back off a little, so leases churn
      } else {
        report.granted.push(decision.lease.id);
        report.maxHeld = Math.max(report.maxHeld, decision.held);
        await sleep(Math.floor(Math.random() * (message.holdMs + 1)));
        if (await decision.lease.release()) report.released.push(decision.lease.id);
        else report.releaseFailed++;
      }
    }
  };
  await Promise.all(Array.from({ length: message.inFlight }, lane));
  process.send({ type: 'done', ...report });
});

client.once('ready', () => process.send({ type: 'ready' }));
