// One worker process (start.mjs forks eight). It has `calls` jobs to do against the third party and works on
// `concurrency` of them at a time; before each call it waits for its turn on the limit all workers share:
// limiter.schedule books the next slot in Redis with one atomic step and runs the call when that slot starts.
// argv: worker name, redis port, third party URL, calls, concurrency. Talks to its parent over IPC: `ready`, then
// `go` from the parent, then its report.
import { createLimiter, gcra } from '@sluice/core';
import { redisStore } from '@sluice/redis';
import { Redis } from 'ioredis';

const [name, redisPort, thirdParty, callsText, concurrencyText] = process.argv.slice(2);
const calls = Number(callsText);
const concurrency = Number(concurrencyText);

const redis = new Redis({ host: '127.0.0.1', port: Number(redisPort) });
// The third party's limit, shared by every worker through Redis: 10 per second, booked one at a time (burst: 1)
// 105 ms apart. The margin: a slot is booked for when the call leaves, the third party counts when it arrives, and
// the two differ by a few ms that vary (timer and event-loop delay, the network). Booked exactly 100 ms apart, a
// call that leaves late followed by calls on time can put 11 in one of the third party's seconds; 1050 ms per 10
// leaves room for 50 ms of that, at 95% of the rate. See the README.
// onStoreError 'deny': with Redis unreachable a wait rejects with the store's error instead of letting every worker
// call at once (failing open suits inbound traffic, not a quota someone else enforces).
const limiter = createLimiter({
  store: redisStore(redis),
  rules: gcra({ limit: 10, period: '1050ms', burst: 1 }),
  name: 'outbound',
  onStoreError: 'deny',
});

const waits = [];
const statuses = {};
let next = 0;
async function loop() {
  while (next < calls) {
    next++;
    const enqueued = Date.now();
    const status = await limiter.schedule(
      'api.third-party.example',
      async () => {
        waits.push(Date.now() - enqueued);
        const res = await fetch(`${thirdParty}/v1/things`, { headers: { 'x-worker': name } });
        await res.arrayBuffer();
        return res.status;
      },
      { maxWait: '20s' },
    );
    statuses[status] = (statuses[status] ?? 0) + 1;
  }
}

// A long-running worker's HTTP client is warm. This one was just started: Node loads and compiles fetch on its first
// call (tens of ms), which would make the first booked call leave late and crowd the next second. One call to the
// free status endpoint (and the Redis connection's handshake) before the first booking.
await (await fetch(`${thirdParty}/v1/status`)).arrayBuffer();
await redis.ping();
// Ready; start.mjs starts all workers together once every one of them is (they boot at once on a small machine,
// and a worker booking while the others still load their modules would have its timers fire late).
await new Promise((resolve) => {
  process.once('message', resolve);
  process.send({ ready: true });
});
await Promise.all(Array.from({ length: concurrency }, loop));
await redis.quit();
process.send({ name, statuses, longestWaitMs: Math.max(...waits) }, () => process.disconnect());
