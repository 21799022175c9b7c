// One OS process of the concurrency test: its own ioredis connection, `inFlight` requests outstanding at once,
// all on the one identity the parent names (batched into shared script calls, or one call each). Reports what
// it was allowed (with take, the units granted; with reserve, the starts booked); it never decides anything itself.
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
    timeout: 30_000,
    circuitBreaker: false,
    onStoreError: 'deny',
  });
  // limit (the default), take with message.cost, or reserve with message.maxWait.
  const decide = () =>
    message.operation === 'take'
      ? limiter.take(message.identity, { cost: message.cost })
      : message.operation === 'reserve'
        ? limiter.reserve(message.identity, { maxWait: message.maxWait })
        : limiter.limit(message.identity);
  let issued = 0;
  const counts = { allowed: 0, denied: 0, degraded: 0, granted: 0 };
  const starts = [];
  const lane = async () => {
    while (issued < message.requests) {
      issued++;
      const decision = await decide();
      if (decision.degraded) counts.degraded++;
      else if (decision.allowed) counts.allowed++;
      else counts.denied++;
      if (!decision.degraded) counts.granted += decision.granted ?? 0;
      if (decision.allowed && decision.startAt !== undefined) starts.push(decision.startAt);
    }
  };
  await Promise.all(Array.from({ length: message.inFlight }, lane));
  process.send({ type: 'done', run: message.run, ...counts, starts });
});

client.once('ready', () => process.send({ type: 'ready' }));
