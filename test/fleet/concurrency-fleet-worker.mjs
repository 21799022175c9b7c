// One OS process of the concurrency fleet test: its own ioredis connection and concurrency limiter (Redis TIME,
// fail-closed, a generous deadline), `loops` lanes until `endAt` (epoch ms). Each lane picks a tenant, acquires,
// and when granted holds the slot `holdMs` and releases it; a refusal retries after a ms. It records, by its own
// wall clock, [Date.now() after the acquire answered, Date.now() before the release was sent] per granted slot and
// reports them at the end. With `announce`, it tells the parent each lease id as it gets it and as it lets it go
// (the parent SIGKILLs such a worker mid-run and then knows which slots it held).
import { Redis } from 'ioredis';
import { createConcurrencyLimiter } from '@sluice/core/concurrency';
import { redisStore } from '@sluice/redis';

const [port] = process.argv.slice(2);
const client = new Redis({ host: '127.0.0.1', port: Number(port) });
const store = redisStore(client);
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

process.on('message', async (message) => {
  if (message.type === 'stop') {
    client.disconnect();
    process.disconnect();
    return;
  }
  const limiter = createConcurrencyLimiter({
    store,
    limit: message.limit,
    ttl: message.ttlMs,
    name: message.name,
    timeout: 30_000,
    circuitBreaker: false,
    onStoreError: 'deny',
  });
  const report = { intervals: message.tenants.map(() => []), acquires: 0, granted: 0, degraded: 0, releaseFailed: 0 };
  const lane = async (lane) => {
    let turn = lane;
    while (Date.now() < message.endAt) {
      const t = turn++ % message.tenants.length;
      const decision = await limiter.acquire(message.tenants[t]);
      const answeredAt = Date.now();
      report.acquires++;
      if (decision.degraded) report.degraded++;
      if (!decision.allowed) {
        await sleep(1);
        continue;
      }
      report.granted++;
      if (message.announce) process.send({ type: 'held', id: decision.lease.id, tenant: t, answeredAt });
      await sleep(message.holdMs);
      const releaseSentAt = Date.now();
      report.intervals[t].push([answeredAt, releaseSentAt]);
      if (message.announce) process.send({ type: 'freed', id: decision.lease.id, releaseSentAt });
      if (!(await decision.lease.release())) report.releaseFailed++;
    }
  };
  await Promise.all(Array.from({ length: message.loops }, (_, i) => lane(i)));
  process.send({ type: 'done', ...report });
});

client.once('ready', () => process.send({ type: 'ready' }));
