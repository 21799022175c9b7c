// Tiered suite: @sluice/tiered (a Store answering from process memory in front of a shared store) against the
// plain Redis store and the peers that also answer hot identities locally, side by side in one run:
// - sluice plain Redis store (createLimiter over redisStore, every decision in Redis);
// - the tier over the same redisStore in each strategy (deny-cache, lease, async), one instance;
// - @upstash/ratelimit fixedWindow with its ephemeral cache, and its cachedFixedWindow, through the local Upstash
//   REST fixture (real HTTP, @upstash/redis client);
// - rate-limiter-flexible RateLimiterRedis with inMemoryBlockOnConsumed = points.
// Everything talks to ONE redis-server: the fixture's (started in a child process with the fixture), which the
// ioredis contestants connect to directly; remote calls are counted the same way for all contestants from that
// server's INFO commandstats (script calls: FCALL/EVALSHA/EVAL; every contestant makes one per remote decision).
//
// Phases: (1) hot identity, paced: fixedWindow 1,000/s offered at --rate decisions/s (default 30,000) with 64 in
// flight for --seconds; admitted per window, remote calls, latency, and the chart. (2) hot identity, closed loop:
// decisions/s with 64 in flight. (3) the tier's local decision against the memory store's limitSync(), a tight
// awaited loop on the hot identity. (4) cold identities: each used once, one in flight: remote calls and latency.
import { copyFileSync, mkdirSync, writeFileSync } from 'node:fs';
import { cpus } from 'node:os';
import { dirname, join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import { createLimiter, fixedWindow } from '@sluice/core';
import { memoryStore } from '@sluice/memory';
import { redisStore } from '@sluice/redis';
import { tieredStore } from '@sluice/tiered';
import { Ratelimit } from '@upstash/ratelimit';
import { Redis as UpstashRedis } from '@upstash/redis';
import { Redis } from 'ioredis';
import { RateLimiterRedis } from 'rate-limiter-flexible';
import { startFixtureProcess } from '../../test/harness/upstash-fixture-process.mjs';
import { now, since } from '../lib/clock.mjs';
import { round } from '../lib/harness.mjs';
import { target } from '../lib/report.mjs';
import { RESULTS_DIR } from '../lib/results.mjs';
import { median, spreadPct } from '../lib/stats.mjs';
import { formatInteger, formatRatio, formatTable } from '../lib/table.mjs';

export const description =
  'hot and cold identities: @sluice/tiered (deny-cache, lease, async) vs the plain Redis store, @upstash/ratelimit caches, rate-limiter-flexible inMemoryBlock';
export const builds = ['@sluice/tiered', '@sluice/redis', '@sluice/upstash', '@sluice/memory'];

const LIMIT = 1_000;
const WINDOW_MS = 1_000;
const HOT = 'hot';
const BUCKET_MS = 20;
const CHART_FILE = 'tiered-hot-identity.svg';
const DOCS_CHART = join(dirname(fileURLToPath(import.meta.url)), '..', '..', 'packages', 'tiered', 'docs', 'hot-identity.svg');
/** Commands that start a script: each is one remote decision (or one batch of them) whatever the script does inside. */
const SCRIPT_CALLS = ['fcall', 'fcall_ro', 'evalsha', 'evalsha_ro', 'eval', 'eval_ro'];

const PLAIN = 'sluice plain Redis store';
const DENY = 'sluice tier deny-cache';
const LEASE = 'sluice tier lease';
const ASYNC = 'sluice tier async';
const UP_EPHEMERAL = '@upstash/ratelimit ephemeralCache';
const UP_CACHED = '@upstash/ratelimit cachedFixedWindow';
const RLF = 'rate-limiter-flexible inMemoryBlock';

export async function run({ options, log }) {
  const quick = Boolean(options.quick);
  const rate = Number(options.rate ?? 30_000);
  const seconds = Number(options.seconds ?? (quick ? 2.2 : 4.2));
  const inFlight = Number(options.inflight ?? 64);
  const loopMs = Number(options.loopMs ?? (quick ? 150 : 300));
  const loopRounds = Number(options.rounds ?? (quick ? 3 : 5));
  const coldOps = Number(options.cold ?? (quick ? 300 : 2_000));
  const tightOps = Number(options.ops ?? (quick ? 20_000 : 50_000));
  const tightRounds = Number(options.tightRounds ?? (quick ? 5 : 15));

  log('starting redis-server and the Upstash REST fixture (child process)');
  const fixture = await startFixtureProcess({ loader: import.meta.resolve('tsx') });
  const redis = new Redis({ host: '127.0.0.1', port: fixture.redisPort, enableAutoPipelining: true });
  const admin = new Redis({ host: '127.0.0.1', port: fixture.redisPort });
  const kinds = makeKinds({ redis, fixture });
  try {
    const serverVersion = /redis_version:([^\r\n]+)/.exec(await admin.info('server'))?.[1] ?? '?';
    // Load every contestant's script once (FUNCTION LOAD, NOSCRIPT -> EVAL): the one-time path is not measured.
    for (const kind of kinds) {
      const instance = kind.create('warmup');
      await instance.decide('warmup');
      await instance.close();
    }

    // (1) Hot identity, paced.
    log(`hot identity, paced: ${formatInteger(rate)} decisions/s offered for ${seconds} s, ${inFlight} in flight, per contestant`);
    const hot = new Map();
    for (const kind of kinds) {
      const result = await hotPaced(kind, admin, { rate, seconds, inFlight });
      hot.set(kind.name, result);
      log(
        `  ${kind.name}: ${formatInteger(result.decisions)} decisions (${formatInteger(result.achievedRate)}/s), admitted per full window ${result.windows.map((w) => w.admitted).join(', ')}, script calls/dec ${result.scriptCallsPerDecision.toFixed(5)}${result.degraded ? `, degraded ${result.degraded}` : ''}`,
      );
    }

    // (2) Hot identity, closed loop.
    log(`hot identity, closed loop: ${inFlight} in flight, ${loopRounds} rounds of ${loopMs} ms per contestant, interleaved`);
    const throughput = await closedLoop(kinds, { inFlight, loopMs, rounds: loopRounds });

    // (3) The tier's local decision against the memory store's limitSync().
    log(`local decisions: a tight loop on the hot identity, ${formatInteger(tightOps)} decisions per round, ${tightRounds} rounds`);
    const tight = await tightLoop(redis, { ops: tightOps, rounds: tightRounds, warmupRounds: quick ? 1 : 2, log });

    // (4) Cold identities.
    log(`cold identities: ${formatInteger(coldOps)} identities per contestant, each used once, one in flight, interleaved in 4 slices`);
    const cold = await coldPass(kinds, admin, coldOps);

    // Rows: one per contestant, timed by the closed loop; the other phases as columns.
    const rows = kinds.map((kind) => {
      const t = throughput.get(kind.name);
      const h = hot.get(kind.name);
      const c = cold.get(kind.name);
      return {
        name: kind.name,
        ...t,
        over: h.worstOver,
        under: h.worstUnder,
        scriptCallsPerDecision: h.scriptCallsPerDecision,
        storeCallsPerDecision: h.storeCallsPerDecision,
        hotP50Us: h.p50Us,
        hotP99Us: h.p99Us,
        coldScriptCallsPerDecision: c.scriptCallsPerDecision,
        coldStoreCallsPerDecision: c.storeCallsPerDecision,
        coldP50Us: c.p50Us,
        coldP99Us: c.p99Us,
        degraded: h.degraded + c.degraded + t.degraded,
      };
    });
    const row = (name) => rows.find((r) => r.name === name);
    const tightRow = (name) => tight.find((r) => r.name === name);
    const calls = (v) => (v === undefined ? '–' : v >= 0.1 ? v.toFixed(2) : v.toFixed(5));

    // Targets.
    const targets = [];
    const plain = row(PLAIN);
    for (const name of [LEASE, DENY]) {
      const s = row(name);
      targets.push(
        target(
          `${name}: >= 100x fewer remote calls than the plain Redis store on the hot identity (Redis script calls per decision, INFO commandstats, same method for both)`,
          plain.scriptCallsPerDecision / s.scriptCallsPerDecision,
          '>=',
          100,
          (v) => `${formatRatio(v)} (${calls(plain.scriptCallsPerDecision)} vs ${calls(s.scriptCallsPerDecision)})`,
        ),
        target(
          `${name}: >= 100x fewer remote calls than the plain Redis store on the hot identity (store calls: tier.stats() remoteCalls/decisions vs 1)`,
          1 / s.storeCallsPerDecision,
          '>=',
          100,
          (v) => `${formatRatio(v)} (1 vs ${calls(s.storeCallsPerDecision)})`,
        ),
      );
    }
    const memSync = tightRow('memory store limitSync()');
    for (const name of [DENY, LEASE, ASYNC]) {
      const t = tightRow(`${name} await limit()`);
      targets.push(
        target(
          `${name}: >= 1,000,000 decisions/s per process on the hot identity (tight loop of local decisions, each awaited, CPU clock)`,
          t.opsPerSec,
          '>=',
          1_000_000,
          (v) =>
            `${formatInteger(v)}/s (wall clock ${formatInteger(1e9 / t.wallNsPerOp)}/s; all rounds, remote calls included: ${formatInteger(1e9 / t.allNsPerOp)}/s)`,
        ),
        target(
          `${name}: local decision within 2x of the memory store's limitSync() (same loop, CPU clock)`,
          t.nsPerOp / memSync.nsPerOp,
          '<=',
          2,
          (v) =>
            `${formatRatio(v)} (${t.nsPerOp.toFixed(0)} ns vs ${memSync.nsPerOp.toFixed(0)} ns; ${t.localRounds} rounds without a remote call, ${t.localPct}% of all the loop's decisions local)`,
        ),
      );
    }
    for (const name of [DENY, LEASE, ASYNC]) {
      const s = row(name);
      targets.push(
        target(
          `${name}: a cold identity costs <= 1 remote call (Redis script calls per cold decision; store calls in brackets)`,
          s.coldScriptCallsPerDecision,
          '<=',
          1,
          (v) => `${v.toFixed(3)} (store calls ${s.coldStoreCallsPerDecision.toFixed(3)})`,
        ),
        target(
          `${name}: cold p50 latency within 1.25x of the plain store's (one in flight)`,
          s.coldP50Us / plain.coldP50Us,
          '<=',
          1.25,
          (v) =>
            `${formatRatio(v)} (${s.coldP50Us.toFixed(0)} µs vs ${plain.coldP50Us.toFixed(0)} µs; p99 ${s.coldP99Us.toFixed(0)} vs ${plain.coldP99Us.toFixed(0)} µs)`,
        ),
      );
    }

    // The chart: every contestant whose windows are the clock's, so that a peer's over- or under-admission shows
    // beside the tier's strategies (rate-limiter-flexible's windows start at its first consume: left out).
    const svg = chartSvg(
      [PLAIN, DENY, LEASE, ASYNC, UP_EPHEMERAL, UP_CACHED].filter((name) => hot.has(name)).map((name) => ({ name, ...hot.get(name) })),
      { rate, inFlight },
    );
    mkdirSync(RESULTS_DIR, { recursive: true });
    const chartPath = join(RESULTS_DIR, CHART_FILE);
    writeFileSync(chartPath, svg);
    mkdirSync(dirname(DOCS_CHART), { recursive: true });
    copyFileSync(chartPath, DOCS_CHART);
    log(`chart: bench/results/${CHART_FILE}, copied to packages/tiered/docs/hot-identity.svg`);

    const kindOf = (name) => kinds.find((k) => k.name === name);
    const us = (v) => (v >= 100 ? v.toFixed(0) : v.toFixed(1));
    const signed = (v, sign) => (v === 0 ? '0' : `${sign}${formatInteger(v)}`);
    const markdown = [
      `| contestant | guarantee | worst over-admission | worst under-admission | remote calls/decision (hot) | p50 / p99 µs (hot) | decisions/s (hot, ${inFlight} in flight) | remote calls/decision (cold) | p50 / p99 µs (cold) |`,
      '| --- | --- | --- | --- | --- | --- | --- | --- | --- |',
      ...rows.map((r) => {
        const h = hot.get(r.name);
        return `| ${r.name} | ${kindOf(r.name).guarantee} | ${signed(r.over, '+')} of ${formatInteger(LIMIT)} (${h.windows.length} windows) | ${signed(r.under, '−')} | ${calls(r.scriptCallsPerDecision)}${r.storeCallsPerDecision === undefined || r.name === PLAIN ? '' : ` (store ${calls(r.storeCallsPerDecision)})`} | ${us(r.hotP50Us)} / ${us(r.hotP99Us)} | ${formatInteger(r.opsPerSec)} | ${calls(r.coldScriptCallsPerDecision)} | ${us(r.coldP50Us)} / ${us(r.coldP99Us)} |`;
      }),
    ];
    const tierStats = [DENY, LEASE, ASYNC].map((name) => `${name}: ${JSON.stringify(hot.get(name).tierStats)}`);
    const loadNote = `Machine: ${cpus().length} cores shared by this process, the fixture and redis-server (see the load average below).`;

    return {
      title: `Tiered (one local redis-server ${serverVersion}, Upstash REST fixture in front of it): hot identity fixedWindow ${formatInteger(LIMIT)}/s, ${inFlight} in flight; rows timed by the closed loop (median of ${loopRounds} rounds of ${loopMs} ms, wall clock)`,
      rows,
      ratios: [],
      columns: [
        { key: 'over', label: 'over', format: (v) => signed(v, '+') },
        { key: 'under', label: 'under', format: (v) => signed(v, '−') },
        { key: 'scriptCallsPerDecision', label: 'remote/dec hot', format: calls },
        { key: 'storeCallsPerDecision', label: 'store/dec hot', format: calls },
        { key: 'hotP50Us', label: 'p50 µs hot', format: us },
        { key: 'hotP99Us', label: 'p99 µs hot', format: us },
        { key: 'coldScriptCallsPerDecision', label: 'remote/dec cold', format: (v) => v.toFixed(3) },
        { key: 'coldP50Us', label: 'p50 µs cold', format: us },
        { key: 'coldP99Us', label: 'p99 µs cold', format: us },
        { key: 'degraded', label: 'degraded', format: String },
      ],
      sections: [
        { heading: 'Markdown (hot: paced phase; cold: each identity used once, one in flight)', lines: markdown },
        {
          heading: `Local decisions: a tight loop on one identity over its limit (fixedWindow 1,000 per hour, so the window never rolls over during the loop), each decision awaited (limitSync() is not), ${formatInteger(tightOps)} per round, ${tightRounds} rounds; time: median of the rounds without a remote call, CPU clock`,
          lines: formatTable(tight, {
            ratios: [{ key: 'vsSync', label: '÷ limitSync', base: 'memory store limitSync()' }],
            columns: [
              { key: 'wallNsPerOp', label: 'wall ns/op', format: (v) => v.toFixed(1) },
              { key: 'localRounds', label: 'local rounds', format: String },
              { key: 'allNsPerOp', label: 'all rounds ns/op', format: (v) => v.toFixed(1) },
              { key: 'localPct', label: 'local decisions', format: (v) => `${v}%` },
            ],
          }).split('\n'),
        },
        {
          heading: 'Hot identity, paced phase: admitted per full window (limit 1,000) and offered rate reached',
          lines: rows.map((r) => {
            const h = hot.get(r.name);
            return `${r.name.padEnd(40)} ${h.windows.map((w) => String(w.admitted).padStart(5)).join(' ')}   (${formatInteger(h.decisions)} decisions at ${formatInteger(h.achievedRate)}/s)`;
          }),
        },
        { heading: 'Tier counters after the paced phase (tier.stats(), close() included)', lines: tierStats },
      ],
      targets,
      notes: [
        `Workload: one hot identity, fixedWindow ${formatInteger(LIMIT)} per 1 s, offered at ${formatInteger(rate)} decisions/s (paced; --rate) with at most ${inFlight} in flight, for ${seconds} s per contestant, each on fresh keys; then the same identity in a closed loop (as fast as ${inFlight} in flight go); cold identities are each used once, one decision in flight.`,
        'Equivalent configurations: sluice fixedWindow({ limit: 1000, window: "1s" }) over redisStore(ioredis, enableAutoPipelining) (the tier: tieredStore({ remote, instances: 1, strategy }) with its defaults); @upstash/ratelimit Ratelimit.fixedWindow(1000, "1 s") with ephemeralCache: new Map(), and Ratelimit.cachedFixedWindow(1000, "1 s"), analytics off, over @upstash/redis through the fixture (HTTP); rate-limiter-flexible RateLimiterRedis({ points: 1000, duration: 1, inMemoryBlockOnConsumed: 1000 }) on the same ioredis client (its window starts at the first consume, not on the clock).',
        '"remote/dec": Redis script calls (FCALL, EVALSHA, EVAL: one per remote decision or per batch of them) per decision, from INFO commandstats deltas on the one redis-server, counted over the phase and until the contestant is closed (a tier\'s lease returns and flushes included; @upstash/ratelimit\'s background updates awaited). The same method for every contestant; the plain store batches the decisions issued in one tick into one FCALL, so it is below 1 at 64 in flight. "store/dec": calls the tier made to its remote store per decision (tier.stats(): remoteCalls ÷ decisions); the plain store is 1 by definition.',
        `"over"/"under": worst admitted-per-window above / below the limit over the full windows of the paced phase (windows as each limiter reports them: resetAt, reset, msBeforeNext). With one instance every strategy's bound is 0 over; the tier's multi-instance bounds (instances × maxUnsynced for async; other instances' leases for lease) are not exercised here.`,
        `The deny-cache strategy still decides every admitted unit remotely: per window it makes about limit + in-flight remote calls, so its reduction is at most offered ÷ (limit + ${inFlight}) (${formatRatio(rate / (LIMIT + inFlight))} at ${formatInteger(rate)}/s); it can reach 100x only when the hot identity is offered >= 100x its limit.`,
        'Latency: from the call to the answer, in µs. Hot: the paced phase (local answers and the remote ones among them). Cold: one in flight, fresh identities. Throughput (ns/op, ops/s): the closed loop, per process.',
        `Chart: ${CHART_FILE} (and packages/tiered/docs/hot-identity.svg): admitted so far in the current 1 s window at the end of each ${BUCKET_MS} ms bucket, per contestant (rate-limiter-flexible left out: its windows start at its first consume, not on the clock), against the limit.`,
        ...rows
          .filter((r) => hot.get(r.name).achievedRate < rate * 0.95)
          .map(
            (r) =>
              `${r.name} reached only ${formatInteger(hot.get(r.name).achievedRate)} of the ${formatInteger(rate)} decisions/s offered in the paced phase (its remote decisions queued; it stopped after 1.5x the phase): any under-admission it shows there is capacity on this machine, not its algorithm.`,
          ),
        loadNote,
      ],
      data: {
        rate,
        seconds,
        inFlight,
        limit: LIMIT,
        hot: Object.fromEntries([...hot].map(([name, h]) => [name, { ...h, buckets: undefined, chart: h.buckets }])),
        tight,
        cold: Object.fromEntries(cold),
      },
    };
  } finally {
    for (const kind of kinds) await kind.shutdown?.();
    redis.disconnect();
    admin.disconnect();
    await fixture.stop();
  }
}

// ---------------------------------------------------------------------------------------------------------------
// Contestants. A kind makes fresh instances (own keys) per phase: `decide(identity)` answers the window end (epoch
// ms) of an admitted decision or 0 for a refusal; `close()` waits for its background work.

function makeKinds({ redis, fixture }) {
  let serial = 0;
  const upstashClient = () => new UpstashRedis({ url: fixture.url, token: fixture.token, enableTelemetry: false });
  const sluice = (name, strategy, guarantee) => ({
    name,
    guarantee,
    create(phase) {
      const remote = redisStore(redis);
      const tier = strategy === undefined ? undefined : tieredStore({ remote, instances: 1, strategy });
      const limiter = createLimiter({
        store: tier ?? remote,
        rules: fixedWindow({ limit: LIMIT, window: '1s' }),
        name: `bench-tier-${strategy ?? 'plain'}-${phase}-${serial++}`,
        timeout: 10_000,
      });
      const instance = {
        degraded: 0,
        async decide(id) {
          const d = await limiter.limit(id);
          if (d.degraded) instance.degraded++;
          return d.allowed ? d.resetAt : 0;
        },
        stats: () => tier?.stats(),
        close: async () => tier?.close(),
      };
      return instance;
    },
  });
  const upstash = (name, cached, guarantee) => ({
    name,
    guarantee,
    create(phase) {
      const limiter = new Ratelimit({
        redis: upstashClient(),
        limiter: cached ? Ratelimit.cachedFixedWindow(LIMIT, '1 s') : Ratelimit.fixedWindow(LIMIT, '1 s'),
        prefix: `bench-tier-upstash-${cached ? 'cached' : 'ephemeral'}-${phase}-${serial++}`,
        ephemeralCache: new Map(),
        analytics: false,
        timeout: 10_000,
      });
      const pending = [];
      const instance = {
        degraded: 0,
        async decide(id) {
          const r = await limiter.limit(id);
          if (cached) pending.push(r.pending);
          if (r.reason === 'timeout') instance.degraded++;
          return r.success ? r.reset : 0;
        },
        stats: () => undefined,
        close: async () => {
          await Promise.allSettled(pending);
        },
      };
      return instance;
    },
  });
  const rlf = {
    name: RLF,
    guarantee: 'exact: a key is blocked in memory once consumed ≥ points, until its window ends',
    create(phase) {
      const limiter = new RateLimiterRedis({
        storeClient: redis,
        points: LIMIT,
        duration: 1,
        inMemoryBlockOnConsumed: LIMIT,
        keyPrefix: `bench-tier-rlf-${phase}-${serial++}`,
      });
      const instance = {
        degraded: 0,
        async decide(id) {
          try {
            const res = await limiter.consume(id);
            return Date.now() + res.msBeforeNext;
          } catch (error) {
            if (error instanceof Error) instance.degraded++;
            return 0;
          }
        },
        stats: () => undefined,
        close: async () => {},
      };
      return instance;
    },
  };
  return [
    sluice(PLAIN, undefined, 'exact: every decision in Redis'),
    sluice(DENY, 'deny-cache', 'exact: only refusals answered locally, until retryAt'),
    sluice(LEASE, 'lease', 'never over; under ≤ units in other instances’ batches'),
    sluice(ASYNC, 'async', 'over ≤ instances × maxUnsynced per window'),
    upstash(UP_EPHEMERAL, false, 'exact: only refusals cached locally, until reset'),
    upstash(UP_CACHED, true, 'counts locally per process after its first call in a window; Redis updated in the background'),
    rlf,
  ];
}

// ---------------------------------------------------------------------------------------------------------------
// Phases

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

async function scriptCalls(admin) {
  const text = await admin.info('commandstats');
  let total = 0;
  for (const match of text.matchAll(/^cmdstat_([^:]+):calls=(\d+)/gm)) if (SCRIPT_CALLS.includes(match[1])) total += Number(match[2]);
  return total;
}

/** The hot identity at a paced offered rate: slots every 1/rate s, at most `inFlight` decisions waiting for an answer. */
async function hotPaced(kind, admin, { rate, seconds, inFlight }) {
  const instance = kind.create('hot');
  const total = Math.round(rate * seconds);
  const interval = 1000 / rate;
  const latencies = new Float64Array(total);
  const admittedAt = [];
  const admittedReset = [];
  let decided = 0;
  let next = 0;
  await collect();
  const callsBefore = await scriptCalls(admin);
  const startEpoch = Date.now();
  const start = performance.now();
  const deadline = start + seconds * 1000 * 1.5; // a contestant that cannot keep up stops here
  const worker = async () => {
    while (next < total) {
      const slot = next++;
      const wait = start + slot * interval - performance.now();
      if (wait >= 1) await sleep(wait);
      if (performance.now() > deadline) break;
      const t0 = performance.now();
      const reset = await instance.decide(HOT);
      const t1 = performance.now();
      latencies[decided++] = t1 - t0;
      if (reset !== 0) {
        admittedAt.push(t1 - start);
        admittedReset.push(reset);
      }
    }
  };
  await Promise.all(Array.from({ length: inFlight }, worker));
  const elapsedMs = performance.now() - start;
  const endEpoch = startEpoch + elapsedMs;
  await instance.close();
  const callsAfter = await scriptCalls(admin);
  const tierStats = instance.stats();

  const sorted = latencies.subarray(0, decided).sort();
  const at = (p) => sorted[Math.min(sorted.length - 1, Math.floor(p * sorted.length))] * 1000;
  const windows = admittedPerWindow(admittedReset, startEpoch, endEpoch, kind.name !== RLF);
  const scriptCallsPerDecision = (callsAfter - callsBefore) / decided;
  return {
    decisions: decided,
    achievedRate: Math.round((decided / elapsedMs) * 1000),
    admitted: admittedAt.length,
    windows,
    worstOver: Math.max(0, ...windows.map((w) => w.admitted - LIMIT)),
    worstUnder: Math.max(0, ...windows.map((w) => LIMIT - w.admitted)),
    scriptCallsPerDecision,
    storeCallsPerDecision: tierStats === undefined ? (kind.name === PLAIN ? 1 : undefined) : tierStats.remoteCalls / tierStats.decisions,
    p50Us: at(0.5),
    p99Us: at(0.99),
    degraded: instance.degraded,
    tierStats,
    buckets: buckets(admittedAt, startEpoch, elapsedMs),
  };
}

/**
 * Admitted per window, for the windows that lie wholly inside the phase. A window is identified by the end its
 * limiter reported (decisions of one window report ends within half a window of each other). Clock-aligned
 * limiters also get their empty windows (admitted 0); rate-limiter-flexible's windows start at a first consume.
 */
function admittedPerWindow(resets, startEpoch, endEpoch, aligned) {
  const sorted = Float64Array.from(resets).sort();
  const groups = [];
  for (const reset of sorted) {
    const last = groups.at(-1);
    if (last !== undefined && reset - last.end < WINDOW_MS / 2) last.admitted++;
    else groups.push({ end: reset, admitted: 1 });
  }
  const tolerance = 20;
  if (!aligned)
    return groups
      .filter((g) => g.end - WINDOW_MS >= startEpoch - tolerance && g.end <= endEpoch + tolerance)
      .map((g) => ({ end: g.end, admitted: g.admitted }));
  const windows = [];
  for (let end = Math.ceil(startEpoch / WINDOW_MS) * WINDOW_MS + WINDOW_MS; end <= endEpoch; end += WINDOW_MS) {
    const group = groups.find((g) => Math.abs(g.end - end) < WINDOW_MS / 2);
    windows.push({ end, admitted: group?.admitted ?? 0 });
  }
  return windows;
}

/** Admitted so far in the current clock second, at the end of each 100 ms bucket (by answer time). */
function buckets(admittedAt, startEpoch, elapsedMs) {
  const gridStart = Math.floor(startEpoch / BUCKET_MS) * BUCKET_MS;
  const count = Math.ceil((startEpoch + elapsedMs - gridStart) / BUCKET_MS);
  const per = new Array(count).fill(0);
  for (const t of admittedAt) per[Math.min(count - 1, Math.floor((startEpoch + t - gridStart) / BUCKET_MS))]++;
  const cumulative = [];
  let inWindow = 0;
  for (let b = 0; b < count; b++) {
    if ((gridStart + b * BUCKET_MS) % WINDOW_MS === 0) inWindow = 0;
    inWindow += per[b];
    cumulative.push(inWindow);
  }
  return {
    startMs: gridStart - startEpoch,
    bucketMs: BUCKET_MS,
    firstWindowMs: Math.ceil(startEpoch / WINDOW_MS) * WINDOW_MS - startEpoch,
    cumulative,
  };
}

/** Decisions/s on the hot identity with `inFlight` in flight, as fast as they go; rounds interleaved in a rotating order. */
async function closedLoop(kinds, { inFlight, loopMs, rounds }) {
  const instances = kinds.map((kind) => kind.create('loop'));
  const perRound = kinds.map(() => []);
  for (const instance of instances) await drive(instance, 50, inFlight); // first calls out of the way
  for (let r = 0; r < rounds; r++) {
    for (let k = 0; k < kinds.length; k++) {
      const index = (k + r) % kinds.length;
      await collect();
      const decided = await drive(instances[index], loopMs, inFlight);
      perRound[index].push(decided.nsPerOp);
    }
  }
  const out = new Map();
  for (const [i, kind] of kinds.entries()) {
    await instances[i].close();
    const nsPerOp = median(perRound[i]);
    out.set(kind.name, {
      nsPerOp: round(nsPerOp, 1),
      opsPerSec: Math.round(1e9 / nsPerOp),
      spreadPct: round(spreadPct(perRound[i]), 1),
      clock: 'wall',
      degraded: instances[i].degraded,
    });
  }
  return out;
}

async function drive(instance, ms, inFlight) {
  const start = performance.now();
  const end = start + ms;
  let decided = 0;
  const worker = async () => {
    while (performance.now() < end) {
      await instance.decide(HOT);
      decided++;
    }
  };
  await Promise.all(Array.from({ length: inFlight }, worker));
  return { nsPerOp: ((performance.now() - start) * 1e6) / decided };
}

/**
 * The tier's local answer against the memory store's, one identity, one decision at a time (the tier's awaited,
 * limitSync() not). Rounds rotate over the contestants, start from a collected heap and are timed on both clocks.
 * A tier's round is "local" when the tier made no remote call during it; the row's time is the median of those
 * rounds (the median of all rounds is kept as allNsPerOp): the target is about the local decision. With the
 * hour-long window every round after the warmup should be local; the column shows whether they were.
 */
async function tightLoop(redis, { ops, rounds, warmupRounds, log }) {
  // A window longer than the loop: past the first 1,000 decisions the identity stays over its limit, so every
  // decision is a local one (a deny-cache hit, which is how each strategy answers a hot identity over its limit).
  const rules = fixedWindow({ limit: LIMIT, window: '1h' });
  const memory = createLimiter({ store: memoryStore(), rules, name: 'bench-tier-memory' });
  let allowed = 0;
  const contestants = [
    {
      name: 'memory store limitSync()',
      run(n) {
        for (let i = 0; i < n; i++) if (memory.limitSync(HOT).allowed) allowed++;
      },
    },
    {
      name: 'memory store await limit()',
      async run(n) {
        for (let i = 0; i < n; i++) if ((await memory.limit(HOT)).allowed) allowed++;
      },
    },
    ...['deny-cache', 'lease', 'async'].map((strategy) => {
      const store = tieredStore({ remote: redisStore(redis), instances: 1, strategy });
      const limiter = createLimiter({ store, rules, name: `bench-tier-tight-${strategy}`, timeout: 10_000 });
      return {
        name: `sluice tier ${strategy} await limit()`,
        store,
        async run(n) {
          for (let i = 0; i < n; i++) if ((await limiter.limit(HOT)).allowed) allowed++;
        },
      };
    }),
  ];
  const timings = contestants.map(() => ({ cpu: [], wall: [], local: [], decisions: 0, localDecisions: 0 }));
  try {
    for (let r = -warmupRounds; r < rounds; r++) {
      for (let k = 0; k < contestants.length; k++) {
        const index = (k + Math.max(0, r)) % contestants.length;
        const c = contestants[index];
        await collect();
        const before = c.store?.stats();
        const start = now();
        await c.run(ops);
        const elapsed = since(start);
        if (r < 0) continue;
        const t = timings[index];
        t.cpu.push(elapsed.cpu / ops);
        t.wall.push(elapsed.wall / ops);
        const after = c.store?.stats();
        t.local.push(after === undefined || after.remoteCalls === before.remoteCalls);
        if (after !== undefined) {
          t.decisions += after.decisions - before.decisions;
          t.localDecisions += after.local - before.local;
        }
      }
      if (r >= 0) log(`round ${r + 1}/${rounds}`);
    }
  } finally {
    for (const c of contestants) await c.store?.close();
  }
  const rows = contestants.map((c, i) => {
    const t = timings[i];
    const pick = (list) => {
      const local = list.filter((_, j) => t.local[j]);
      return local.length > 0 ? local : list;
    };
    const nsPerOp = median(pick(t.cpu));
    return {
      name: c.name,
      nsPerOp: round(nsPerOp, 1),
      opsPerSec: Math.round(1e9 / nsPerOp),
      spreadPct: round(spreadPct(pick(t.cpu)), 1),
      clock: 'cpu',
      wallNsPerOp: round(median(pick(t.wall)), 1),
      allNsPerOp: round(median(t.cpu), 1),
      localRounds: `${t.local.filter(Boolean).length}/${t.local.length}`,
      localPct: c.store === undefined ? undefined : round((t.localDecisions / t.decisions) * 100, 2),
    };
  });
  for (const r of rows) r.vsSync = Math.round((r.nsPerOp / rows[0].nsPerOp) * 100) / 100;
  log(`tight loop: ${formatInteger(allowed)} decisions allowed in all`);
  return rows;
}

/** Fresh identities, each used once, one in flight; slices interleave the contestants; Redis counted per slice. */
async function coldPass(kinds, admin, ops) {
  const slices = 4;
  const per = Math.ceil(ops / slices);
  const state = kinds.map((kind) => ({ kind, instance: kind.create('cold'), latencies: [], calls: 0, decided: 0 }));
  for (let s = 0; s < slices; s++) {
    for (const st of state) {
      const before = await scriptCalls(admin);
      for (let i = 0; i < per; i++) {
        const id = `cold-${s * per + i}`;
        const t0 = performance.now();
        await st.instance.decide(id);
        st.latencies.push((performance.now() - t0) * 1000);
        st.decided++;
      }
      st.calls += (await scriptCalls(admin)) - before;
    }
  }
  const out = new Map();
  for (const st of state) {
    const stats = st.instance.stats();
    await st.instance.close();
    st.latencies.sort((a, b) => a - b);
    const at = (p) => st.latencies[Math.min(st.latencies.length - 1, Math.floor(p * st.latencies.length))];
    out.set(st.kind.name, {
      decisions: st.decided,
      scriptCallsPerDecision: st.calls / st.decided,
      storeCallsPerDecision: stats === undefined ? (st.kind.name === PLAIN ? 1 : undefined) : stats.remoteCalls / stats.decisions,
      p50Us: at(0.5),
      p99Us: at(0.99),
      degraded: st.instance.degraded,
      tierStats: stats,
    });
  }
  return out;
}

async function collect() {
  await new Promise((resolve) => setImmediate(resolve));
  if (typeof globalThis.gc === 'function') {
    globalThis.gc();
    await sleep(20);
  }
}

// ---------------------------------------------------------------------------------------------------------------
// The chart: one panel per contestant, admitted so far in the current window against the limit. Plain SVG text.

function chartSvg(series, { rate, inFlight }) {
  const width = 880;
  const left = 70;
  const right = 24;
  const top = 74;
  const panelHeight = 110;
  const gap = 34;
  const bottom = 46;
  const height = top + series.length * (panelHeight + gap) - gap + bottom;
  const plotWidth = width - left - right;
  const spanMs = Math.max(...series.map((s) => s.buckets.cumulative.length * s.buckets.bucketMs + s.buckets.startMs));
  const maxValue = Math.max(LIMIT * 1.2, ...series.map((s) => Math.max(...s.buckets.cumulative) * 1.05));
  const x = (ms) => left + (Math.max(0, ms) / spanMs) * plotWidth;
  const esc = (text) => String(text).replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');
  const out = [];
  out.push(
    `<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height}" viewBox="0 0 ${width} ${height}" font-family="system-ui, -apple-system, 'Segoe UI', sans-serif" font-size="12">`,
  );
  out.push(`<rect width="${width}" height="${height}" fill="#ffffff"/>`);
  out.push(
    `<text x="${left}" y="22" font-size="15" font-weight="600" fill="#111">Hot identity: fixedWindow ${formatInteger(LIMIT)} per 1 s, offered ${formatInteger(rate)}/s, ${inFlight} in flight</text>`,
  );
  // Legend.
  out.push(`<line x1="${left}" y1="44" x2="${left + 28}" y2="44" stroke="#1f6feb" stroke-width="2"/>`);
  out.push(`<text x="${left + 34}" y="48" fill="#333">admitted so far in the current 1 s window (per ${BUCKET_MS} ms bucket)</text>`);
  out.push(`<line x1="${left + 420}" y1="44" x2="${left + 448}" y2="44" stroke="#d1242f" stroke-width="1.5" stroke-dasharray="6 4"/>`);
  out.push(`<text x="${left + 454}" y="48" fill="#333">limit (${formatInteger(LIMIT)} per window)</text>`);
  out.push(`<line x1="${left + 610}" y1="38" x2="${left + 610}" y2="50" stroke="#d0d7de" stroke-dasharray="2 3"/>`);
  out.push(`<text x="${left + 616}" y="48" fill="#333">window boundary</text>`);
  for (const [i, s] of series.entries()) {
    const y0 = top + i * (panelHeight + gap);
    const y = (v) => y0 + panelHeight - (v / maxValue) * panelHeight;
    const over = s.worstOver === 0 ? '0' : `+${s.worstOver}`;
    const under = s.worstUnder === 0 ? '0' : `−${s.worstUnder}`;
    out.push(
      `<text x="${left}" y="${y0 - 8}" font-weight="600" fill="#111">${esc(s.name)}<tspan dx="10" font-weight="400" fill="#555">worst per window: over ${over}, under ${under}; ${remoteText(s.scriptCallsPerDecision)} remote calls per decision</tspan></text>`,
    );
    out.push(`<rect x="${left}" y="${y0}" width="${plotWidth}" height="${panelHeight}" fill="#fafbfc" stroke="#d0d7de"/>`);
    for (const v of maxValue >= 2 * LIMIT ? [0, LIMIT, 2 * LIMIT] : [0, LIMIT / 2, LIMIT]) {
      out.push(`<line x1="${left - 4}" y1="${y(v).toFixed(1)}" x2="${left}" y2="${y(v).toFixed(1)}" stroke="#666"/>`);
      out.push(`<text x="${left - 7}" y="${(y(v) + 4).toFixed(1)}" text-anchor="end" fill="#555">${formatInteger(v)}</text>`);
    }
    // Window boundaries (the limit's windows are aligned to the clock, not to the start of the run).
    for (let ms = s.buckets.firstWindowMs; ms <= spanMs; ms += WINDOW_MS) {
      out.push(
        `<line x1="${x(ms).toFixed(1)}" y1="${y0}" x2="${x(ms).toFixed(1)}" y2="${y0 + panelHeight}" stroke="#d0d7de" stroke-dasharray="2 3"/>`,
      );
    }
    out.push(
      `<line x1="${left}" y1="${y(LIMIT).toFixed(1)}" x2="${left + plotWidth}" y2="${y(LIMIT).toFixed(1)}" stroke="#d1242f" stroke-width="1.5" stroke-dasharray="6 4"/>`,
    );
    const { startMs, bucketMs, cumulative } = s.buckets;
    const points = [];
    for (const [b, v] of cumulative.entries()) {
      const from = startMs + b * bucketMs;
      points.push(`${x(from).toFixed(1)},${y(v).toFixed(1)}`, `${x(from + bucketMs).toFixed(1)},${y(v).toFixed(1)}`);
    }
    out.push(`<polyline points="${points.join(' ')}" fill="none" stroke="#1f6feb" stroke-width="2"/>`);
  }
  const axisY = top + series.length * (panelHeight + gap) - gap;
  for (let ms = 0; ms <= spanMs; ms += 1000) {
    out.push(`<text x="${x(ms).toFixed(1)}" y="${axisY + 16}" text-anchor="middle" fill="#555">${ms / 1000}</text>`);
  }
  out.push(
    `<text x="${left + plotWidth / 2}" y="${axisY + 36}" text-anchor="middle" fill="#333">time since the contestant's run started (s)</text>`,
  );
  out.push('</svg>');
  return `${out.join('\n')}\n`;
}

function remoteText(v) {
  return v >= 0.1 ? v.toFixed(2) : v.toFixed(4);
}
