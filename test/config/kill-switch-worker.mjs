// One instance of the fleet in the runtime-configuration proof: its own ioredis client, a limiter on a redisStore
// (a local memory store as the fallback while Redis is away) and watchConfig on redisConfigSource, with pub/sub or
// (argv[3] === '0') with the periodic read only. On 'start' it decides steadily (about one decision per
// millisecond, round-robin over a few identities) and records each decision: when it was asked (Date.now(), the
// clock the CLI stamps updatedAt with), for whom, the reason and the limit of the rule that decided. It never
// judges anything itself: the parent reads the records ('dump') and checks them.
import { Redis } from 'ioredis';
import { createLimiter, fixedWindow } from '@sluice/core';
import { watchConfig } from '@sluice/core/config';
import { memoryStore } from '@sluice/memory';
import { redisConfigSource, redisStore } from '@sluice/redis';

const [port, pubsub] = process.argv.slice(2);
const IDENTITIES = ['acme', 'globex', 'initech'];
const RATE_PER_MS = 1;

const client = new Redis({ host: '127.0.0.1', port: Number(port) });
client.on('error', () => {}); // the kill at the end: reconnect errors are expected, the records show the rest

const limiter = createLimiter({
  store: redisStore(client),
  rules: fixedWindow({ id: 'w', limit: 20, window: '1h' }),
  name: 'api',
  onStoreError: memoryStore(),
});
const redisSource = redisConfigSource(client);
// Without pub/sub: the same source minus subscribe, so only the watcher's refresh can bring a change.
const source =
  pubsub === '1'
    ? redisSource
    : { read: (n) => redisSource.read(n), write: (n, t) => redisSource.write(n, t), remove: (n) => redisSource.remove(n) };
const warnings = [];
const watcher = watchConfig(limiter, source, {
  refresh: '1s',
  onWarning: (w) => warnings.push({ code: w.code, message: w.message, at: Date.now() }),
});

const records = { at: [], who: [], reason: [], limit: [], degraded: [] };
let errors = [];
let unhandled = 0;
process.on('unhandledRejection', () => void unhandled++);
let running = false;

async function load() {
  const started = Date.now();
  let made = 0;
  while (running) {
    const who = made % IDENTITIES.length;
    const at = Date.now();
    try {
      const decision = await limiter.limit(IDENTITIES[who]);
      records.at.push(at);
      records.who.push(who);
      records.reason.push(decision.reason);
      records.limit.push(decision.limit);
      records.degraded.push(decision.degraded);
    } catch (error) {
      errors.push(String(error));
    }
    made++;
    // Steady, not flat out: about RATE_PER_MS decisions per ms, so timers (the watcher's refresh) run on time.
    if (made > (Date.now() - started) * RATE_PER_MS) await new Promise((r) => setTimeout(r, 1));
  }
}

let sent = 0;
process.on('message', async (message) => {
  if (message.type === 'start') {
    running = true;
    void load();
  } else if (message.type === 'dump') {
    // Only what is new since the last dump, to keep messages small.
    const slice = (list) => list.slice(sent);
    process.send({
      type: 'dump',
      identities: IDENTITIES,
      at: slice(records.at),
      who: slice(records.who),
      reason: slice(records.reason),
      limit: slice(records.limit),
      degraded: slice(records.degraded),
      errors,
      unhandled,
      warnings,
      mode: limiter.mode,
      quotas: [...limiter.quotas.keys()],
    });
    sent = records.at.length;
  } else if (message.type === 'stop') {
    running = false;
    await watcher.stop();
    client.disconnect();
    process.disconnect();
  }
});

await watcher.ready;
process.send({ type: 'ready', mode: limiter.mode });
