// One worker process of the fleet concurrency part (forked with an IPC channel). It opens an ioredis connection and
// builds both contestants on it (sluice's concurrency limiter on redisStore, and the reference sorted-set
// semaphore below; the reference also on a second, auto-pipelined connection), tells the parent it is ready, and on `run` starts `loops` concurrent loops until `endAt`
// (epoch ms): each loop picks a tenant, acquires, and when granted holds the slot `holdMs` and releases it; a
// refusal retries at once. It measures by its own wall clock only: each acquire's latency (performance.now()
// before the call and after its answer) and, per granted slot, [Date.now() after the acquire answered,
// Date.now() before the release was sent], which the parent sweeps for exactness. With `stream`, held intervals
// are sent every 50 ms (the parent may SIGKILL this process mid-run and keeps what arrived); with `announce`, each
// slot's id as it is granted and before its release is sent (so the parent knows what a killed worker held).
// argv: redis port.
import { createConcurrencyLimiter } from '@sluice/core/concurrency';
import { redisStore } from '@sluice/redis';
import { Redis } from 'ioredis';

/**
 * The reference: a sorted set of holders (member = id, score = expiry ms on Redis TIME). Expired holders are
 * dropped, then a slot is taken if fewer than the limit are held. Release is ZREM. KEYS[1]: the semaphore;
 * ARGV: limit, ttl ms, id. Answers 1 when the slot was taken, 0 when refused.
 */
const REFERENCE_ACQUIRE = `
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now)
if redis.call('ZCARD', KEYS[1]) >= tonumber(ARGV[1]) then return 0 end
redis.call('ZADD', KEYS[1], now + tonumber(ARGV[2]), ARGV[3])
redis.call('PEXPIRE', KEYS[1], ARGV[2])
return 1
`;

/** Latency histogram: 10 µs buckets up to 1 s (the last bucket takes everything slower); the parent reads it so. */
const BUCKET_MS = 0.01;
const BUCKETS = 100_000;

const port = Number(process.argv[2]);
const client = new Redis({ host: '127.0.0.1', port });
// The reference once more on a connection of its own with ioredis's auto-pipelining (the commands of one tick in
// one write): what a user of the plain semaphore could turn on.
const pipelined = new Redis({ host: '127.0.0.1', port, enableAutoPipelining: true });
for (const c of [client, pipelined]) c.defineCommand('referenceAcquire', { numberOfKeys: 1, lua: REFERENCE_ACQUIRE });
const store = redisStore(client);
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

/** An acquire that answers the slot's id and release function when granted, undefined when refused; counts degraded answers. */
function contestant(message, counts) {
  if (message.contestant !== 'sluice') {
    const redis = message.contestant === 'reference' ? client : pipelined;
    let next = 0;
    const prefix = `${process.pid}-`;
    return async (tenant) => {
      const key = `reference:${message.name}:{${tenant}}`;
      const id = prefix + next++;
      if ((await redis.referenceAcquire(key, message.limit, message.ttlMs, id)) !== 1) return undefined;
      return { id, release: () => redis.zrem(key, id) };
    };
  }
  // Fail closed with the default deadline: a store failure is counted, never turned into a slot.
  const limiter = createConcurrencyLimiter({ store, limit: message.limit, ttl: message.ttlMs, name: message.name, onStoreError: 'deny' });
  return async (tenant) => {
    const decision = await limiter.acquire(tenant);
    if (decision.degraded) counts.degraded++;
    if (!decision.allowed) return undefined;
    return { id: decision.lease.id, release: () => decision.lease.release() };
  };
}

async function run(message) {
  const counts = { acquires: 0, granted: 0, degraded: 0, releaseErrors: 0 };
  const acquire = contestant(message, counts);
  const histogram = new Uint32Array(BUCKETS);
  /** Per tenant, flat [answeredAt, releaseSentAt, ...] pairs (epoch ms). */
  const intervals = message.tenants.map(() => []);
  let unsent = message.tenants.map(() => []);
  const flush = () => {
    if (unsent.some((pairs) => pairs.length > 0)) process.send({ type: 'intervals', intervals: unsent });
    unsent = message.tenants.map(() => []);
  };
  const streaming = message.stream ? setInterval(flush, 50) : undefined;
  let draw = message.seed >>> 0;
  const loop = async () => {
    while (Date.now() < message.endAt) {
      draw = (Math.imul(draw, 1664525) + 1013904223) >>> 0;
      const t = draw % message.tenants.length;
      const started = performance.now();
      const slot = await acquire(message.tenants[t]);
      const answered = performance.now();
      const answeredAt = Date.now();
      counts.acquires++;
      histogram[Math.min(BUCKETS - 1, Math.floor((answered - started) / BUCKET_MS))]++;
      if (slot === undefined) continue;
      counts.granted++;
      if (message.announce) process.send({ type: 'held', id: slot.id });
      await sleep(message.holdMs);
      const releaseSentAt = Date.now();
      (message.stream ? unsent : intervals)[t].push(answeredAt, releaseSentAt);
      if (message.announce) process.send({ type: 'freed', id: slot.id });
      try {
        await slot.release();
      } catch {
        counts.releaseErrors++;
      }
    }
  };
  const startedAt = Date.now();
  const cpuBefore = process.cpuUsage();
  await Promise.all(Array.from({ length: message.loops }, loop));
  const cpu = process.cpuUsage(cpuBefore);
  const endedAt = Date.now();
  if (streaming !== undefined) {
    clearInterval(streaming);
    flush();
  }
  // The histogram travels sparse: [bucket, count, ...].
  const sparse = [];
  for (let i = 0; i < BUCKETS; i++) if (histogram[i] !== 0) sparse.push(i, histogram[i]);
  process.send({
    type: 'done',
    ...counts,
    startedAt,
    endedAt,
    cpuUs: cpu.user + cpu.system,
    histogram: sparse,
    intervals: message.stream ? undefined : intervals,
  });
}

process.on('message', (message) => {
  if (message.type === 'stop') {
    client.disconnect();
    pipelined.disconnect();
    process.disconnect();
    return;
  }
  if (message.type === 'run') {
    run(message).catch((error) => {
      process.send({ type: 'error', message: String(error?.stack ?? error) });
    });
  }
});

Promise.all([client, pipelined].map((c) => new Promise((resolve) => c.once('ready', resolve)))).then(() => process.send({ type: 'ready' }));
