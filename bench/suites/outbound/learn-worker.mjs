// One worker process of the fleet's outbound part (forked with an IPC channel): `jobs` loops calling the sliding-second
// mock third party until `endAt`, each call waiting for its turn first. It starts cold: nothing is sent to Redis or
// to the mock before the parent's start time (no script loaded, no connection to the mock opened), as a process
// that was just deployed. Contestants:
// - shared:    the configuration packages/http/README.md shows for a fleet, as written there:
//              createLimiter({ store: redisStore(redis), name, rules: thirdPartyLimit({ requests, per: '1s' }),
//              onStoreError: 'deny' }), createThrottledFetch({ limiter, maxWait: '30s', learn: { source:
//              redisConfigSource(redis) } }) and watchConfig(limiter, redisConfigSource(redis)); the global fetch;
// - pushback:  the same with learn: false: a 429's Retry-After pushes the shared queue back, the rate stays;
// - reference: the bench's own, below: a rate and a next-slot time in Redis (one Lua call books a slot), and on a
//              429 the rate is halved, at most once per 2.5 s fleet-wide (SET NX PX).
// It reports every call's wait (enqueue to answer, ms) and status, and failed calls.
// argv: contestant, redis port, mock port, jobs, limit (the third party's, per second), reference rate (per second),
// client id (mock header, limiter name).
import { createLimiter } from '@sluice/core';
import { watchConfig } from '@sluice/core/config';
import { createThrottledFetch, thirdPartyLimit } from '@sluice/http/fetch';
import { redisConfigSource, redisStore } from '@sluice/redis';
import { Redis } from 'ioredis';
import { runLoops } from './loops.mjs';

const [contestant, redisPortText, mockPortText, jobsText, limitText, rateText, id] = process.argv.slice(2);
const jobs = Number(jobsText);
const limit = Number(limitText);
const rate = Number(rateText);
const url = `http://127.0.0.1:${mockPortText}/call`;
const redis = new Redis({ host: '127.0.0.1', port: Number(redisPortText) });
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));
/** The mock tells contestants apart by this header. */
const init = { headers: { 'x-client': id } };

// The reference: KEYS[1] the rate (per s), KEYS[2] the next free slot (µs, Redis TIME). Books the next slot and
// returns the wait in µs; the second script halves the rate unless it was halved in the last ARGV[2] ms.
const BOOK = `
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000000 + tonumber(t[2])
local rate = tonumber(redis.call('GET', KEYS[1]) or ARGV[1])
local start = math.max(now, tonumber(redis.call('GET', KEYS[2]) or 0))
redis.call('SET', KEYS[2], string.format('%d', start + math.floor(1000000 / rate)), 'PX', 60000)
return string.format('%d', start - now)`;
const HALVE = `
if not redis.call('SET', KEYS[2], '1', 'PX', ARGV[2], 'NX') then return 0 end
local rate = tonumber(redis.call('GET', KEYS[1]) or ARGV[1])
redis.call('SET', KEYS[1], tostring(math.max(1, rate / 2)), 'PX', 600000)
return 1`;

function reference() {
  const keys = [`reference:{${id}}:rate`, `reference:{${id}}:next`];
  const cutKeys = [keys[0], `reference:{${id}}:cut`];
  return async () => {
    const waitUs = Number(await redis.eval(BOOK, 2, ...keys, String(rate)));
    await sleep(waitUs / 1000);
    const response = await fetch(url, init);
    await response.arrayBuffer();
    if (response.status === 429) await redis.eval(HALVE, 2, ...cutKeys, String(rate), '2500');
    return response.status;
  };
}

let watcher;
function sluice(learn) {
  // As packages/http/README.md shows it for a fleet (its `redis` is this process's ioredis client).
  const limiter = createLimiter({
    store: redisStore(redis),
    name: id,
    rules: thirdPartyLimit({ requests: limit, per: '1s' }),
    onStoreError: 'deny',
  });
  const fetchApi = createThrottledFetch({ limiter, maxWait: '30s', learn: learn ? { source: redisConfigSource(redis) } : false });
  if (learn) watcher = watchConfig(limiter, redisConfigSource(redis));
  return async () => {
    const response = await fetchApi(url, init);
    await response.arrayBuffer();
    return response.status;
  };
}

const call = contestant === 'reference' ? reference() : sluice(contestant === 'shared');
const go = await new Promise((resolve) => {
  process.once('message', resolve);
  process.send({ ready: true });
});
await sleep(go.startAt - Date.now());
const { waits, statuses, errors } = await runLoops({ jobs, endAt: go.endAt, call });
await watcher?.stop();
await redis.quit();
process.send({ waits, statuses, errors: errors.slice(0, 5), errorCount: errors.length }, () => process.disconnect());
