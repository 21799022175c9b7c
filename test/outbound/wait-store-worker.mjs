// One worker process of test/outbound/wait-stores.test.ts (outbound calls on SQLite and Upstash): its own store
// instance (a better-sqlite3 connection to the shared file, or an @upstash/redis client to the REST fixture) and its
// own limiter gcra({ id: 'api', limit, period: '1s', burst: 1 }). On `run` it sleeps until `startAt`, then loops
// until `until`: limiter.wait(identity, { maxWait: '30s' }), recording when the wait began, when it resolved
// (Date.now() right after), and the decision's booked `startAt` and `now` (the store's clock: the limiter's on
// SQLite, Redis TIME on Upstash). A wait is begun only before `until`. It reports what it saw; the parent decides.
import { createLimiter, gcra } from '@sluice/core';

const [kind, ...args] = process.argv.slice(2);

async function openStore() {
  if (kind === 'sqlite') {
    const { default: Database } = await import('better-sqlite3');
    const { sqliteStore } = await import('@sluice/sqlite');
    const db = new Database(args[0]);
    return { store: sqliteStore(db), close: () => db.close() };
  }
  if (kind === 'upstash') {
    const { Redis } = await import('@upstash/redis');
    const { upstashStore } = await import('@sluice/upstash');
    const [url, token] = args;
    const redis = new Redis({ url, token, enableTelemetry: false });
    return { store: upstashStore(redis), close: () => undefined };
  }
  throw new Error(`wait-store-worker: unknown store kind ${JSON.stringify(kind)}, expected 'sqlite' or 'upstash'`);
}

const { store, close } = await openStore();
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, Math.max(0, ms)));

process.on('message', async (message) => {
  if (message.type === 'stop') {
    close();
    process.disconnect();
    return;
  }
  // Fail closed: a store failure must be an error in the report, never a wait resolved at once.
  const limiter = createLimiter({
    store,
    rules: gcra({ id: 'api', limit: message.limit, period: '1s', burst: 1 }),
    timeout: 10_000,
    circuitBreaker: false,
    onStoreError: 'deny',
  });
  const records = [];
  const errors = [];
  await sleep(message.startAt - Date.now());
  while (Date.now() < message.until) {
    const began = Date.now();
    try {
      const decision = await limiter.wait(message.identity, { maxWait: '30s' });
      const served = Date.now();
      records.push({ worker: message.worker, began, served, startAt: decision.startAt ?? decision.now, now: decision.now });
    } catch (error) {
      errors.push(String(error?.stack ?? error));
      if (errors.length > 20) break; // enough to say what went wrong
    }
  }
  process.send({ type: 'done', records, errors });
});

// Warm up before reporting ready: the first decision prepares the statements (SQLite) or opens the keep-alive
// connection and loads the script (Upstash: NOSCRIPT, then EVAL); either would make the first slots of a run late.
const warm = createLimiter({
  store,
  rules: gcra({ id: 'warm', limit: 1000, period: '1s' }),
  timeout: 10_000,
  circuitBreaker: false,
  onStoreError: 'deny',
});
await warm.wait(`warm-up-${process.pid}`, { maxWait: '5s' });
process.send({ type: 'ready' });
