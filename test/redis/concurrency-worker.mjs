// One OS process of the concurrency test: its own ioredis connection, `inFlight` requests outstanding at once,
// all on the one identity the parent names (batched into shared script calls, or one call each). Reports what
// it was allowed; it never decides anything itself.
import { Redis } from 'ioredis';
import { createLimiter } from '@sluice/core';
import { redisStore } from '@sluice/redis';

const [port, pipelining, batch] = process.argv.slice(2);
const client = new Redis({ host: '127.0.0.1', port: Number(port), enableAutoPipelining: pipelining === '1' });

process.on('message', async (message) => {
  if (message.type === 'stop') {
    client.disconnect();
    process.disconnect();
    return;
  }
  // A generous deadline and fail-closed: a slow machine must not turn into extra allows, and errors are counted.
  const limiter = createLimiter({
    store: redisStore(client, { batch: batch === '1' }),
    rules: message.rules,
    name: message.name,
    timeoutMs: 30_000,
    circuitBreaker: false,
    onStoreError: 'deny',
  });
  let issued = 0;
  const counts = { allowed: 0, denied: 0, degraded: 0 };
  const lane = async () => {
    while (issued < message.requests) {
      issued++;
      const decision = await limiter.limit(message.identity);
      if (decision.degraded) counts.degraded++;
      else if (decision.allowed) counts.allowed++;
      else counts.denied++;
    }
  };
  await Promise.all(Array.from({ length: message.inFlight }, lane));
  process.send({ type: 'done', run: message.run, ...counts });
});

client.once('ready', () => process.send({ type: 'ready' }));
