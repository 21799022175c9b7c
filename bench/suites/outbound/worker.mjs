// One of the outbound suite's worker processes (forked with an IPC channel). It connects its limiter to the shared
// redis-server, warms it up (scripts loaded, connections open), tells the parent it is ready, and on `go` runs
// `jobs` concurrent loops until `endAt` (epoch ms): each loop enqueues a call, waits for its turn through the
// limiter, sends it to the mock third party and starts the next one when the answer is in. It reports the waits
// (enqueue to send, ms), the answers it got and the Redis commands its clients sent during the run.
// argv: contestant ('sluice' | 'bottleneck'), redis port, mock port, jobs, limit (per second), limiter id.
import { Agent, request } from 'node:http';
import { createLimiter, gcra } from '@sluice/core';
import { redisStore } from '@sluice/redis';
import Bottleneck from 'bottleneck';
import { Redis } from 'ioredis';
import { runLoops } from './loops.mjs';

const [contestant, redisPortText, mockPortText, jobsText, limitText, id] = process.argv.slice(2);
const redisPort = Number(redisPortText);
const mockPort = Number(mockPortText);
const jobs = Number(jobsText);
const limit = Number(limitText);

/** Every command this process's Redis clients send, by name (ioredis has one entry point for commands). */
const sent = new Map();
class CountingRedis extends Redis {
  sendCommand(command, stream) {
    sent.set(command.name, (sent.get(command.name) ?? 0) + 1);
    return super.sendCommand(command, stream);
  }

  duplicate(override) {
    return new CountingRedis({ ...this.options, ...override });
  }
}

const agent = new Agent({ keepAlive: true, maxSockets: jobs });
/** One call to the third party; resolves with its status code. */
function call(client = id) {
  return new Promise((resolve, reject) => {
    const req = request(
      { host: '127.0.0.1', port: mockPort, path: '/call', method: 'GET', agent, headers: { 'x-client': client } },
      (res) => {
        res.resume();
        res.once('end', () => resolve(res.statusCode));
      },
    );
    req.once('error', reject);
    req.end();
  });
}

/** @returns {Promise<{ run: (fn: () => Promise<number>) => Promise<number>, close: () => Promise<void>, degraded: () => number }>} */
async function sluice() {
  const client = new CountingRedis({ host: '127.0.0.1', port: redisPort });
  const limiter = createLimiter({ store: redisStore(client), rules: gcra({ limit, period: '1s', burst: 1 }), name: id });
  let degraded = 0;
  // Warm-up on an identity of its own: loads the Redis Function and opens the connection before the run.
  await limiter.reserve(`warmup-${process.pid}`, { maxWait: '1s' });
  return {
    run: async (fn) => {
      const decision = await limiter.wait('third-party', { maxWait: '30s' });
      if (decision.degraded) degraded++;
      return fn();
    },
    close: async () => {
      await client.quit();
    },
    degraded: () => degraded,
  };
}

async function bottleneck() {
  // The configuration bottleneck's README gives for "N requests per second" (Quick Start: minTime = 1000 / N),
  // in Clustering mode (settings shared through Redis under `id`), with the `expiration` its Clustering section
  // strongly recommends on every job. Reservoir refreshes are not used: the README asks for intervals that are
  // multiples of 5000 ms when clustering (a refresh only happens when some limiter calls Redis).
  const limiter = new Bottleneck({
    id,
    datastore: 'ioredis',
    clientOptions: { host: '127.0.0.1', port: redisPort },
    Redis: CountingRedis,
    minTime: Math.round(1000 / limit),
  });
  let failed;
  limiter.on('error', (error) => (failed ??= error));
  await limiter.ready();
  await limiter.running(); // one script call, so the scripts and the settings are in place before the run
  return {
    run: (fn) => limiter.schedule({ expiration: 30_000 }, fn),
    close: async () => {
      await limiter.disconnect(true);
      if (failed !== undefined) throw failed;
    },
    degraded: () => 0,
  };
}

const contestants = { sluice, bottleneck };
if (!(contestant in contestants)) throw new Error(`unknown contestant ${contestant}`);
const limiter = await contestants[contestant]();
// The keep-alive connections to the third party are opened before the run too (counted apart by the mock).
await Promise.all(Array.from({ length: jobs }, () => call(`${id}-warmup`)));

const go = await new Promise((resolve) => {
  process.once('message', resolve);
  process.send({ ready: true });
});
sent.clear();
const { waits, statuses, errors } = await runLoops({ jobs, endAt: go.endAt, schedule: (send) => limiter.run(send), send: () => call() });
const sentDuringRun = Object.fromEntries(sent);
await limiter.close();
agent.destroy();
process.send(
  {
    waits: waits.map(([, ms]) => ms),
    statuses,
    errors: errors.slice(0, 5),
    errorCount: errors.length,
    sent: sentDuringRun,
    degraded: limiter.degraded(),
  },
  () => process.disconnect(),
);
