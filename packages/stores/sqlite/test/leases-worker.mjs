// One OS process of the SQLite leases test: its own better-sqlite3 connection to the shared file, and either
// - 'run': `inFlight` lanes that loop until `deadline`: acquire a lease for the one identity, hold it a few ms,
//   release it. While it holds a lease, a holder is counted in the `holders` table (incremented after its acquire
//   resolved, decremented before its release starts; each a one-statement transaction of its own); or
// - 'hold': take `count` leases with a short ttl, report them, and never release them (the parent SIGKILLs it).
// It reports what it saw; the parent decides.
import Database from 'better-sqlite3';
import { createConcurrencyLimiter } from '@sluice/core/concurrency';
import { sqliteStore } from '@sluice/sqlite';

const [file] = process.argv.slice(2);
const db = new Database(file);
const store = sqliteStore(db);
const enter = db.prepare('UPDATE holders SET n = n + 1, peak = max(peak, n + 1) WHERE name = ? RETURNING n').pluck();
const leave = db.prepare('UPDATE holders SET n = n - 1 WHERE name = ? RETURNING n').pluck();

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

function limiter(message) {
  // Fail closed with a generous deadline: a slow machine must not turn into extra admissions; errors are counted.
  return createConcurrencyLimiter({
    store,
    limit: message.limit,
    ttl: message.ttl,
    name: message.name,
    timeout: 30_000,
    circuitBreaker: false,
    onStoreError: 'deny',
  });
}

async function run(message) {
  const inFlight = limiter(message);
  const counts = { acquired: 0, denied: 0, degraded: 0, releasedFalse: 0, peak: 0, maxHeld: 0, negative: 0 };
  while (Date.now() < message.start) await sleep(1);
  const lane = async () => {
    while (Date.now() < message.deadline) {
      const decision = await inFlight.acquire(message.identity);
      if (decision.degraded) {
        counts.degraded++;
        continue;
      }
      counts.maxHeld = Math.max(counts.maxHeld, decision.held);
      if (!decision.allowed) {
        counts.denied++;
        await sleep(1); // a refused holder comes back soon, as a client told to retry would
        continue;
      }
      counts.acquired++;
      counts.peak = Math.max(counts.peak, enter.get(message.name));
      await sleep(1 + Math.floor(Math.random() * 4));
      if (leave.get(message.name) < 0) counts.negative++;
      if (!(await decision.lease.release())) counts.releasedFalse++;
    }
  };
  await Promise.all(Array.from({ length: message.inFlight }, lane));
  process.send({ type: 'done', ...counts });
}

async function hold(message) {
  const inFlight = limiter(message);
  const expiries = [];
  for (let i = 0; i < message.count; i++) {
    const decision = await inFlight.acquire(message.identity);
    if (!decision.allowed || decision.degraded) throw new Error(`hold: acquire ${i} was not granted (${decision.reason})`);
    expiries.push(decision.lease.expiresAt);
  }
  process.send({ type: 'holding', expiries });
  // Stays alive holding them until killed.
  setInterval(() => {}, 60_000);
}

process.on('message', (message) => {
  if (message.type === 'stop') {
    db.close();
    process.disconnect();
    return;
  }
  const work = message.type === 'run' ? run(message) : hold(message);
  work.catch((error) => {
    process.send({ type: 'error', message: String(error?.stack ?? error) });
  });
});

process.send({ type: 'ready' });
