// One worker process of the outbound suite: the fleet configuration packages/http/README.md shows, as written there
// (every other option at its default: the identity is the URL's host, the fetch is the global one), calling the
// mock third party from `jobs` loops. It starts cold: before the run it only loads its modules and makes its
// objects (the Redis client connects, watchConfig reads the configuration document); nothing is booked and nothing
// is sent to the mock. On `run` it waits until `startAt`, then each loop calls until `until` (a call is started
// only before `until`), and it reports every call: when it began, when its answer came, its status; and failures.
// argv: redis port, mock URL, jobs, limiter name.
import { Redis } from 'ioredis';
import { createLimiter } from '@sluice/core';
import { watchConfig } from '@sluice/core/config';
import { createThrottledFetch, thirdPartyLimit } from '@sluice/http/fetch';
import { redisConfigSource, redisStore } from '@sluice/redis';

const [port, mockUrl, jobsText, name] = process.argv.slice(2);
const redis = new Redis({ host: '127.0.0.1', port: Number(port) });
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

// As in packages/http/README.md (its limiter name, 'payments-api', is the run's name here: one document per run).
const limiter = createLimiter({
  store: redisStore(redis),
  name,
  rules: thirdPartyLimit({ requests: 50, per: '1s' }),
  onStoreError: 'deny',
});
const fetchApi = createThrottledFetch({ limiter, maxWait: '30s', learn: { source: redisConfigSource(redis) } });
const watcher = watchConfig(limiter, redisConfigSource(redis));

process.on('message', async (message) => {
  if (message.type === 'stop') {
    await watcher.stop();
    redis.disconnect();
    process.disconnect();
    return;
  }
  const records = [];
  const errors = [];
  await sleep(message.startAt - Date.now());
  const loop = async () => {
    while (Date.now() < message.until) {
      const began = Date.now();
      try {
        const response = await fetchApi(`${mockUrl}/v1/items`);
        await response.text();
        records.push({ began, answered: Date.now(), status: response.status });
      } catch (error) {
        errors.push(String(error));
        await sleep(50);
      }
    }
  };
  await Promise.all(Array.from({ length: Number(jobsText) }, loop));
  process.send({ type: 'done', records, errors });
});

process.send({ type: 'ready' });
