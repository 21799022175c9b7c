// One worker process of the fleet's outbound part (forked with an IPC channel): `jobs` loops calling the sliding-second
// mock third party until `endAt`, each call waiting for its turn first. Contestants:
// - shared:    createThrottledFetch({ limiter, learn: { source: redisConfigSource(redis) } }) over limiter.wait
//              (GCRA on redisStore): a bare 429 halves the limit the whole fleet uses, stored in Redis;
// - pushback:  the same throttled fetch with learn: false: a 429's Retry-After pushes the shared queue back, the
//              rate stays as written (the behaviour before the fleet learned);
// - reference: the bench's own, below: a rate and a next-slot time in Redis (one Lua call books a slot), and on a
//              429 the rate is halved, at most once per 2.5 s fleet-wide (SET NX PX).
// It reports every call's wait (enqueue to send, ms) and status, and failed calls.
// argv: contestant, redis port, mock port, jobs, rate (per second, as written), client id (mock header, limiter name).
import { createLimiter, gcra } from '@sluice/core';
import { createThrottledFetch } from '@sluice/http/fetch';
import { redisConfigSource, redisStore } from '@sluice/redis';
import { Redis } from 'ioredis';
import { runLoops } from './loops.mjs';

const [contestant, redisPortText, mockPortText, jobsText, rateText, id] = process.argv.slice(2);
const jobs = Number(jobsText);
const rate = Number(rateText);
const url = `http://127.0.0.1:${mockPortText}/call`;
const client = new Redis({ host: '127.0.0.1', port: Number(redisPortText) });
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));
/** The call itself: one GET with the client header, the body read. */
const send = async (clientId = id) => {
  const response = await fetch(url, { headers: { 'x-client': clientId } });
  await response.arrayBuffer();
  return response;
};

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
  return async (call) => {
    const waitUs = Number(await client.eval(BOOK, 2, ...keys, String(rate)));
    await sleep(waitUs / 1000);
    const response = await call();
    if (response.status === 429) await client.eval(HALVE, 2, ...cutKeys, String(rate), '2500');
    return response;
  };
}

function sluice(learn) {
  const limiter = createLimiter({
    store: redisStore(client),
    name: id,
    rules: gcra({ id: 'api', limit: rate, period: '1s', burst: 1 }),
    onStoreError: 'deny',
    timeout: '2s',
  });
  const fetchApi = createThrottledFetch({
    limiter,
    maxWait: '30s',
    key: () => 'third-party',
    learn: learn ? { source: redisConfigSource(client) } : false,
    // The throttled fetch calls `fetch` once its slot has started: that is when the call is sent.
    fetch: (_input, init) => init.call(),
  });
  const call = (fn) => fetchApi(url, { call: fn });
  call.warm = () =>
    Promise.all([limiter.reserve(`warmup-${process.pid}`, { maxWait: '1s' }), redisConfigSource(client).read(`warmup-${process.pid}`)]);
  return call;
}

const run = contestant === 'reference' ? reference() : sluice(contestant === 'shared');
// Warm-up: connections to Redis and the mock open, scripts loaded, before the parent starts the clock.
await client.eval(BOOK, 2, `warmup:{${process.pid}}:rate`, `warmup:{${process.pid}}:next`, '1000');
await run.warm?.();
await Promise.all(Array.from({ length: jobs }, () => send(`${id}-warmup`)));

const go = await new Promise((resolve) => {
  process.once('message', resolve);
  process.send({ ready: true });
});
await sleep(go.startAt - Date.now());
const { waits, statuses, errors } = await runLoops({ jobs, endAt: go.endAt, schedule: async (call) => (await run(call)).status, send });
await client.quit();
process.send({ waits, statuses, errors: errors.slice(0, 5), errorCount: errors.length }, () => process.disconnect());
