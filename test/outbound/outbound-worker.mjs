// One worker process of the outbound suite (calls to a rate-limited third party): its own ioredis client, redisStore
// and limiter (GCRA, one slot every 1000/limit ms, burst 1, on Redis TIME), calling the mock third party through
// @sluice/http's throttled fetch (limiter.wait before each request; Retry-After / X-RateLimit-* push the shared queue back).
// On `run` it waits until `startAt`, then loops until `until`: a request is started only before `until`. It reports,
// per request, when its wait began, the slot it booked (the reserve decision's startAt, on Redis TIME), when it was
// served (the slot started and the request was handed to fetch) and the status.
// Following a third party that lowers its limit is the throttled fetch's own (`learn`, on by default): the worker
// has no code for it. A run with `shared: true` learns as a fleet, through the limiter's configuration in Redis
// (learn: { source: redisConfigSource(client) }).
import { Redis } from 'ioredis';
import { createLimiter, gcra } from '@sluice/core';
import { createThrottledFetch } from '@sluice/http/fetch';
import { redisConfigSource, redisStore } from '@sluice/redis';

const [port, mockUrl] = process.argv.slice(2);
const client = new Redis({ host: '127.0.0.1', port: Number(port) });
const store = redisStore(client);
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));
const rule = (limit) => gcra({ id: 'api', limit, period: '1s', burst: 1 });

process.on('message', async (message) => {
  if (message.type === 'stop') {
    client.disconnect();
    process.disconnect();
    return;
  }
  // The booking of the request in flight: the worker sends one request at a time, and the throttled fetch makes one
  // reserve before each send (pushBack's reserves come after a refusal, after the send they follow).
  let booked = 0;
  const onDecision = (event) => {
    if (event.operation === 'reserve' && booked === 0) booked = event.decision.startAt;
  };
  const limiter = createLimiter({
    store,
    rules: rule(message.limit),
    timeout: 5_000,
    circuitBreaker: false,
    onStoreError: 'deny',
    onDecision,
  });
  let served = 0;
  const fetchApi = createThrottledFetch({
    limiter,
    maxWait: '30s',
    key: () => message.identity,
    ...(message.shared ? { learn: { source: redisConfigSource(client) } } : {}),
    fetch: async (input, init) => {
      served = Date.now();
      return fetch(input, init);
    },
  });
  const records = [];
  const errors = [];
  await sleep(message.startAt - Date.now());
  while (Date.now() < message.until) {
    const began = Date.now();
    booked = 0;
    try {
      const response = await fetchApi(`${mockUrl}/v1/items?worker=${message.worker}`);
      await response.text();
      records.push({ worker: message.worker, began, booked, served, status: response.status });
    } catch (error) {
      errors.push(String(error));
    }
  }
  process.send({ type: 'done', records, errors });
});

// Warm up before reporting ready: the first fetch loads undici and opens the keep-alive connection, and the first
// reserve loads the script (NOSCRIPT, then EVAL); either would make the first slots of a run arrive late.
client.once('ready', async () => {
  const warm = createLimiter({ store, rules: gcra({ limit: 1000, period: '1s' }), timeout: 5_000 });
  const response = await createThrottledFetch({ limiter: warm, maxWait: '5s', key: () => 'warm-up' })(`${mockUrl}/warm-up`);
  await response.text();
  process.send({ type: 'ready' });
});
