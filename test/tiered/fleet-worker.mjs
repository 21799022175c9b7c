// One OS process of the tiered fleet simulation: its own ioredis client, redisStore, tieredStore and limiter, and
// `inFlight` concurrent loops that each pick an identity from a seeded Zipf mix, decide, and yield (setImmediate,
// as a request handler would) before the next. It reports, per identity, what it admitted per window (attributed by
// decision.now, the time the decision was made at, never a local timestamp), the remote calls it made for that
// identity, latencies, a timeline of degraded answers and tier.stats(). When the run is over it closes the tier (leases
// go back, counts are flushed), quits its client, sends the report and exits by itself: the parent fails if it does not.
import { Redis } from 'ioredis';
import { createLimiter, fixedWindow } from '@sluice/core';
import { redisStore } from '@sluice/redis';
import { tieredStore } from '@sluice/tiered';

const config = JSON.parse(process.argv[2]);
const { port, strategy, limit, windowMs, name, seed, identities, exponent, inFlight, instances } = config;

const unhandled = [];
process.on('unhandledRejection', (reason) => unhandled.push(String(reason?.stack ?? reason)));
process.on('uncaughtException', (error) => {
  process.send?.({ type: 'crash', error: String(error?.stack ?? error) });
  process.exitCode = 1;
  process.disconnect?.();
});

/** mulberry32: a small seeded PRNG, so every run draws the same identity sequence. */
function prng(state) {
  return () => {
    state = (state + 0x6d2b79f5) | 0;
    let t = Math.imul(state ^ (state >>> 15), 1 | state);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** Zipf over ranks 1..n with exponent s: rank k is drawn with weight k^-s; id-0 is rank 1, the hot one. */
function zipf(n, s, random) {
  const cumulative = new Float64Array(n);
  let total = 0;
  for (let k = 1; k <= n; k++) cumulative[k - 1] = total += 1 / k ** s;
  return () => {
    const u = random() * total;
    let lo = 0;
    let hi = n - 1;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if (cumulative[mid] < u) lo = mid + 1;
      else hi = mid;
    }
    return lo;
  };
}

// Reconnect every 50 ms while the server is away (ioredis's default backs off by 50 ms more per attempt, so after the
// one-second outage its next attempt could come 350 ms after the server is back, and recovery would be measured
// against ioredis's backoff instead of the tier's breaker).
const client = new Redis({ host: '127.0.0.1', port, retryStrategy: () => 50 });
let connectionErrors = 0;
client.on('error', () => connectionErrors++); // expected while the server is down; the tier answers on its local share

const redis = redisStore(client);
/** Remote calls per store key (`sluice:name:{identity}`), counted where the tier reaches the remote store. */
const remoteByKey = new Map();
const remote = {
  capabilities: redis.capabilities,
  limit(request) {
    remoteByKey.set(request.key, (remoteByKey.get(request.key) ?? 0) + 1);
    return redis.limit(request);
  },
  reset: (key, ids) => redis.reset(key, ids),
};
const tier = tieredStore({ remote, instances, strategy, ...(config.async ? { async: config.async } : {}) });
// Fail closed at the limiter: if the tier ever let the limiter's own deadline (250 ms) pass, that answer can only
// refuse, and it is counted apart (reason store_unavailable). The tier has its own breaker; the limiter's is off.
const limiter = createLimiter({ store: tier, rules: fixedWindow({ limit, window: windowMs }), name, onStoreError: 'deny', circuitBreaker: false });

const pick = zipf(identities, exponent, prng(seed));
const names = Array.from({ length: identities }, (_, i) => `id-${i}`);
/** Per identity: window index -> admitted, split by degraded (local share) or not, and decisions made. */
const admitted = names.map(() => new Map());
const admittedDegraded = names.map(() => new Map());
/** Of those, the ones whose answer came after the window decision.now names had ended. */
const lateAdmitted = names.map(() => new Map());
const lateDegraded = names.map(() => new Map());
const decisions = new Float64Array(identities);
const TIMELINE_MS = 50;
/** Date.now() / 50 ms -> [non-degraded, degraded, non-degraded admitted] decisions completed in it. */
const timeline = new Map();
let latencies = new Float32Array(1 << 16);
let count = 0;
let limiterFailures = 0;
let degraded = 0;
/** Degraded answers by error code (the tier's local share), or limiter:code when the limiter's own policy answered. */
const degradedBy = {};
let firstDegradedAt = Infinity;
let lastDegradedAt = -Infinity;

function record(i, decision, latency, doneAt) {
  if (count === latencies.length) {
    const grown = new Float32Array(latencies.length * 2);
    grown.set(latencies);
    latencies = grown;
  }
  latencies[count++] = latency;
  decisions[i]++;
  const slot = Math.floor(doneAt / TIMELINE_MS);
  let row = timeline.get(slot);
  if (row === undefined) timeline.set(slot, (row = [0, 0, 0]));
  if (decision.reason === 'store_unavailable') limiterFailures++;
  if (decision.degraded) {
    degraded++;
    const code = decision.reason === 'store_unavailable' ? `limiter:${decision.error?.code}` : String(decision.error?.code ?? decision.error);
    degradedBy[code] = (degradedBy[code] ?? 0) + 1;
    row[1]++;
    if (doneAt < firstDegradedAt) firstDegradedAt = doneAt;
    if (doneAt > lastDegradedAt) lastDegradedAt = doneAt;
  } else {
    row[0]++;
    if (decision.allowed) row[2]++;
  }
  if (!decision.allowed) return;
  const window = Math.floor(decision.now / windowMs);
  const counts = decision.degraded ? admittedDegraded[i] : admitted[i];
  counts.set(window, (counts.get(window) ?? 0) + 1);
  // Stamped in a window that had ended when the answer came: the only admissions that can have been counted in a
  // later window than their decision.now says (a late answer is stamped with the time the request was made).
  if (window < Math.floor(doneAt / windowMs)) {
    const late = decision.degraded ? lateDegraded[i] : lateAdmitted[i];
    late.set(window, (late.get(window) ?? 0) + 1);
  }
}

async function run(startAt, stopAt) {
  while (Date.now() < startAt) await new Promise((r) => setTimeout(r, Math.min(20, startAt - Date.now())));
  const lane = async () => {
    while (Date.now() < stopAt) {
      const i = pick();
      const started = performance.now();
      const decision = await limiter.limit(names[i]);
      record(i, decision, performance.now() - started, Date.now());
      await new Promise((r) => setImmediate(r));
    }
  };
  await Promise.all(Array.from({ length: inFlight }, lane));
  const closeStarted = performance.now();
  await tier.close();
  const closeMs = performance.now() - closeStarted;
  const prefix = `sluice:${name}:{`;
  const remoteCalls = names.map((id) => remoteByKey.get(`${prefix}${id}}`) ?? 0);
  const report = {
    type: 'report',
    pid: process.pid,
    decisions: Array.from(decisions),
    admitted: admitted.map((m) => [...m]),
    admittedDegraded: admittedDegraded.map((m) => [...m]),
    lateAdmitted: lateAdmitted.map((m) => [...m]),
    lateDegraded: lateDegraded.map((m) => [...m]),
    remoteCalls,
    latencies: latencies.slice(0, count),
    timeline: [...timeline].map(([slot, [ok, bad, okAdmitted]]) => [slot * TIMELINE_MS, ok, bad, okAdmitted]),
    stats: tier.stats(),
    limiterFailures,
    degraded,
    degradedBy,
    firstDegradedAt,
    lastDegradedAt,
    connectionErrors,
    closeMs,
  };
  await client.quit().catch(() => client.disconnect());
  report.unhandled = unhandled;
  process.send(report, () => process.disconnect());
}

process.on('message', (message) => {
  if (message.type !== 'go') return;
  run(message.startAt, message.stopAt).catch((error) => {
    // A decision that rejected (the limiter never should): report it as a crash, and still exit by ourselves.
    process.send({ type: 'crash', error: String(error?.stack ?? error) }, () => process.disconnect());
    process.exitCode = 1;
    client.disconnect();
  });
});
// Warm up before reporting ready: the connection is up and the store's script is loaded in Redis, so that the run
// measures the tier, not a cold start (a burst of 64 first calls on a loaded machine can miss the tier's 150 ms).
client.once('ready', async () => {
  const warm = createLimiter({ store: redis, rules: fixedWindow({ limit: 1, window: windowMs }), name: `${name}-warmup` });
  for (let i = 0; i < 3; i++) await warm.limit(`warmup-${process.pid}`);
  process.send({ type: 'ready' });
});
