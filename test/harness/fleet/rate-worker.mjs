// One OS process of a rate-limit fleet simulation: its own ioredis client and contestant, and `inFlight` concurrent
// loops that each draw an identity (a share of the calls from one abuser, the rest Zipf over `identities` users),
// call the contestant, and yield (setImmediate, as a request handler would) before the next. Every admission is
// recorded with the caller's wall clock: Date.now() just before the call and just after its answer. When the run
// is over it closes what it opened, sends its report to the parent and exits by itself.
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { Redis } from 'ioredis';
import { createLimiter, fixedWindow } from '@sluice/core';
import { redisStore } from '@sluice/redis';
import { tieredStore } from '@sluice/tiered';
import { luaIncr, referenceLease } from './contestants.mjs';

const config = JSON.parse(process.argv[2]);
const { port, contestant, limit, windowMs, name, seed, identities, exponent, abuserShare, inFlight, instances } = config;

const unhandled = [];
process.on('unhandledRejection', (reason) => unhandled.push(String(reason?.stack ?? reason)));

/** mulberry32: a small seeded PRNG, so a run draws the same identity sequence every time. */
function prng(state) {
  return () => {
    state = (state + 0x6d2b79f5) | 0;
    let t = Math.imul(state ^ (state >>> 15), 1 | state);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** An index: `identities` (the abuser) with probability abuserShare, otherwise a Zipf(exponent) rank 0..identities-1. */
function mix(random) {
  const cumulative = new Float64Array(identities);
  let total = 0;
  for (let k = 1; k <= identities; k++) cumulative[k - 1] = total += 1 / k ** exponent;
  return () => {
    if (random() < abuserShare) return identities;
    const u = random() * total;
    let lo = 0;
    let hi = identities - 1;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if (cumulative[mid] < u) lo = mid + 1;
      else hi = mid;
    }
    return lo;
  };
}

// The sluice contestants use ioredis as the root README's fleet example does: `new Redis(url)`, every option at its
// default. The hand-written contestants run it as a fleet would for a script of its own: no offline queue (a
// decision never waits for a reconnect), reconnecting every 100 ms while the server is away.
const handWritten = contestant === 'lua-incr' || contestant === 'reference-lease';
const client = handWritten
  ? new Redis({ host: '127.0.0.1', port, enableOfflineQueue: false, retryStrategy: () => 100, maxRetriesPerRequest: 1 })
  : new Redis(`redis://127.0.0.1:${port}`);
let connectionErrors = 0;
client.on('error', () => connectionErrors++);

const names = Array.from({ length: identities + 1 }, (_, i) => (i === identities ? 'abuser' : `user-${i}`));
let tier;
let decide;
if (contestant === 'lua-incr') {
  decide = luaIncr(client, { limit, windowMs, prefix: `fleet:${name}` });
} else if (contestant === 'reference-lease') {
  decide = referenceLease(client, { limit, windowMs, prefix: `fleet:${name}` });
} else {
  // The root README's fleet example, verbatim: tieredStore({ remote: redisStore(redis, { offlineWait: 0 }), instances,
  // strategy }) under createLimiter({ name, store, rules }), every other option at its default (the limiter's
  // failure policy included). `config.limiter` and `config.tier` add options only where a test says so.
  const remote = redisStore(client, contestant === 'plain' ? {} : { offlineWait: 0 });
  const store = contestant === 'plain' ? remote : (tier = tieredStore({ remote, instances, strategy: contestant, ...(config.tier ?? {}) }));
  const limiter = createLimiter({ name, store, rules: fixedWindow({ limit, window: windowMs }), ...(config.limiter ?? {}) });
  decide = (id) => limiter.limit(id);
}

const pick = mix(prng(seed));
let size = 1 << 16;
let admittedId = new Int32Array(size);
let admittedStart = new Float64Array(size);
let admittedEnd = new Float64Array(size);
let admitted = 0;
let decisions = 0;
let degraded = 0;
let degradedAdmitted = 0;
let rejected = 0;
/** Date.now() at the answer of the last degraded decision (-Infinity: none). */
let lastDegradedAt = Number.NEGATIVE_INFINITY;
/** Degraded decisions by error code (STORE_TIMEOUT, STORE_ERROR, CIRCUIT_OPEN), and those that admitted by reason. */
const degradedCodes = {};
const admittedBy = {};

function record(i, start, end) {
  if (admitted === size) {
    size *= 2;
    const id = new Int32Array(size);
    id.set(admittedId);
    admittedId = id;
    const s = new Float64Array(size);
    s.set(admittedStart);
    admittedStart = s;
    const e = new Float64Array(size);
    e.set(admittedEnd);
    admittedEnd = e;
  }
  admittedId[admitted] = i;
  admittedStart[admitted] = start;
  admittedEnd[admitted] = end;
  admitted++;
}

async function run(startAt, stopAt) {
  while (Date.now() < startAt) await new Promise((r) => setTimeout(r, Math.min(20, startAt - Date.now())));
  const loopDelay = monitorEventLoopDelay({ resolution: 10 });
  loopDelay.enable();
  const lane = async () => {
    while (Date.now() < stopAt) {
      const i = pick();
      const start = Date.now();
      let decision;
      try {
        decision = await decide(names[i]);
      } catch {
        rejected++;
        continue;
      }
      const end = Date.now();
      decisions++;
      if (decision.degraded) {
        degraded++;
        lastDegradedAt = end;
        const code = decision.error?.code ?? 'none';
        degradedCodes[code] = (degradedCodes[code] ?? 0) + 1;
        // What admitted: the store's own answer (the tier's local share: reason 'ok'), or the limiter's failure
        // policy, which answered without any store (reason 'store_unavailable').
        if (decision.allowed) admittedBy[decision.reason] = (admittedBy[decision.reason] ?? 0) + 1;
      }
      if (decision.allowed) {
        record(i, start, end);
        if (decision.degraded) degradedAdmitted++;
      }
      await new Promise((r) => setImmediate(r));
    }
  };
  await Promise.all(Array.from({ length: inFlight }, lane));
  loopDelay.disable();
  const stats = tier?.stats();
  await tier?.close();
  await client.quit().catch(() => client.disconnect());
  process.send(
    {
      type: 'report',
      decisions,
      degraded,
      degradedAdmitted,
      degradedCodes,
      degradedAdmittedReasons: admittedBy,
      lastDegradedAt,
      rejected,
      connectionErrors,
      admitted: { identity: admittedId.slice(0, admitted), start: admittedStart.slice(0, admitted), end: admittedEnd.slice(0, admitted) },
      loopDelayMs: { p99: loopDelay.percentile(99) / 1e6, max: loopDelay.max / 1e6 },
      stats,
      unhandled,
    },
    () => process.disconnect(),
  );
}

process.on('message', (message) => {
  if (message.type !== 'go') return;
  run(message.startAt, message.stopAt).catch((error) => {
    process.send({ type: 'crash', error: String(error?.stack ?? error) }, () => process.disconnect());
    process.exitCode = 1;
    client.disconnect();
  });
});
client.once('ready', () => process.send({ type: 'ready' }));
