/**
 * A fleet in front of one real redis-server: 4 OS processes (fleet-worker.mjs), each with its own ioredis client,
 * redisStore, tieredStore({ remote, instances: 4, strategy }) and a limiter on one fixed-window rule, and 64
 * decisions in flight (64 concurrent loops). Each loop draws identities from a seeded Zipf mix (200 identities,
 * exponent 1.1: id-0, the hot one, gets about a fifth of the traffic, far beyond its limit). Each process reports
 * what it admitted per identity and window, attributed by decision.now (floor(now / window)); the parent adds them up.
 *
 * Asserted per strategy, on a healthy server:
 * - deny-cache and lease: for every identity and every window, admitted <= limit, exactly.
 * - async (flushEvery 10, maxUnsynced 20: the defaults, passed explicitly): admitted <= limit + 4 × 20.
 * - the tier answered locally: remote calls per decision on the hot identity far below 1;
 * - the limit was reached: the hot identity's admissions over the whole windows of the run close to limit × windows.
 * And with the server killed mid-run and restarted on the same port a second later: no crash, no unhandled
 * rejection, degraded answers during the outage only, back to non-degraded within about a second of the restart,
 * and per window the local share's bound (see the second describe).
 */
import { fork } from 'node:child_process';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import type { TierStats, TierStrategy } from '@sluice/tiered';
import { startRedis, type RedisServer } from '../harness/redis.js';

const PROCESSES = 4;
const IN_FLIGHT = 64;
const IDENTITIES = 200;
const EXPONENT = 1.1;
const SEED = 0x5eed;
const HOT = 0; // id-0, Zipf rank 1
/** async counting options, the store's defaults stated here: the over-admission bound is PROCESSES × MAX_UNSYNCED. */
const ASYNC = { flushEvery: 10, maxUnsynced: 20 };
const STRATEGIES: readonly TierStrategy[] = ['deny-cache', 'lease', 'async'];

/** Per window, the most the fleet may admit on one identity beyond the limit, while the remote store answers. */
function slack(strategy: TierStrategy): number {
  return strategy === 'async' ? PROCESSES * ASYNC.maxUnsynced : 0;
}

interface Report {
  pid: number;
  decisions: number[];
  admitted: Array<Array<[number, number]>>;
  admittedDegraded: Array<Array<[number, number]>>;
  lateAdmitted: Array<Array<[number, number]>>;
  lateDegraded: Array<Array<[number, number]>>;
  remoteCalls: number[];
  latencies: Float32Array;
  /** [slot start (epoch ms, 50 ms slots), non-degraded, degraded, non-degraded admitted] by completion time. */
  timeline: Array<[number, number, number, number]>;
  stats: TierStats;
  limiterFailures: number;
  degraded: number;
  degradedBy: Record<string, number>;
  firstDegradedAt: number;
  lastDegradedAt: number;
  connectionErrors: number;
  closeMs: number;
  unhandled: string[];
}

interface Fleet {
  reports: Report[];
  startAt: number;
  stopAt: number;
  /** identity -> window -> admitted, non-degraded and degraded (local share), summed over the processes. */
  admitted: Array<Map<number, number>>;
  admittedDegraded: Array<Map<number, number>>;
  /** Of those, the ones answered after the window their decision.now names had ended. */
  lateAdmitted: Array<Map<number, number>>;
  lateDegraded: Array<Map<number, number>>;
  decisions: number[];
  remoteCalls: number[];
  stats: TierStats;
  latency: { p50: number; p99: number; max: number };
  /** From go to every child gone. */
  wallMs: number;
}

interface RunOptions {
  port: number;
  strategy: TierStrategy;
  limit: number;
  windowMs: number;
  windows: number;
  name: string;
  /** Runs alongside the fleet, given the instant the loops start (epoch ms). */
  during?: (startAt: number) => Promise<void>;
}

/** Forks the fleet, starts it on a window boundary for `windows` windows, and collects what every child reports. */
async function runFleet(options: RunOptions): Promise<Fleet> {
  const children = Array.from({ length: PROCESSES }, (_, index) => {
    const config = {
      port: options.port,
      strategy: options.strategy,
      limit: options.limit,
      windowMs: options.windowMs,
      name: options.name,
      seed: SEED + index,
      identities: IDENTITIES,
      exponent: EXPONENT,
      inFlight: IN_FLIGHT,
      instances: PROCESSES,
      ...(options.strategy === 'async' ? { async: ASYNC } : {}),
    };
    return fork(new URL('./fleet-worker.mjs', import.meta.url), [JSON.stringify(config)], { stdio: 'inherit', serialization: 'advanced' });
  });
  const finished = children.map(
    (child) =>
      new Promise<Report>((resolve, reject) => {
        let report: Report | undefined;
        child.on('message', (m: { type: string; error?: string } & Report) => {
          if (m.type === 'report') report = m;
          if (m.type === 'crash') reject(new Error(`worker ${child.pid} crashed: ${m.error}`));
        });
        child.once('exit', (code, signal) => {
          if (report !== undefined && code === 0) resolve(report);
          else reject(new Error(`worker ${child.pid} exited with ${code ?? signal} ${report === undefined ? 'before reporting' : ''}`));
        });
      }),
  );
  finished.forEach((p) => p.catch(() => undefined)); // awaited below; a rejection must not go unhandled meanwhile
  try {
    await Promise.all(
      children.map((child) => new Promise<void>((resolve, reject) => {
        child.on('message', (m: { type: string }) => m.type === 'ready' && resolve());
        child.once('exit', (code) => reject(new Error(`worker ${child.pid} exited (${code}) before ready`)));
      })),
    );
    // Start on a window boundary (at least 100 ms ahead), so the run covers `windows` whole windows.
    const startAt = Math.ceil((Date.now() + 100) / options.windowMs) * options.windowMs;
    const stopAt = startAt + options.windows * options.windowMs;
    for (const child of children) child.send({ type: 'go', startAt, stopAt });
    const during = options.during?.(startAt);
    // Children must exit by themselves: close the tier, quit the client, report, disconnect. 10 s after the
    // run is over, one still alive is a failure (and is killed by its pid below).
    const exitDeadline = stopAt + 10_000 - Date.now();
    let timer: ReturnType<typeof setTimeout> | undefined;
    const reports = await Promise.race([
      Promise.all(finished),
      new Promise<never>((_, reject) => {
        timer = setTimeout(() => reject(new Error('a worker did not exit by itself within 10 s of the end of the run')), exitDeadline);
      }),
    ]).finally(() => clearTimeout(timer));
    await during;
    return aggregate(reports, startAt, stopAt, Date.now() - startAt);
  } finally {
    for (const child of children) if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
  }
}

function aggregate(reports: Report[], startAt: number, stopAt: number, wallMs: number): Fleet {
  const admitted = Array.from({ length: IDENTITIES }, () => new Map<number, number>());
  const admittedDegraded = Array.from({ length: IDENTITIES }, () => new Map<number, number>());
  const lateAdmitted = Array.from({ length: IDENTITIES }, () => new Map<number, number>());
  const lateDegraded = Array.from({ length: IDENTITIES }, () => new Map<number, number>());
  const decisions = new Array<number>(IDENTITIES).fill(0);
  const remoteCalls = new Array<number>(IDENTITIES).fill(0);
  const stats = {} as Record<keyof TierStats, number>;
  let total = 0;
  for (const r of reports) {
    for (let i = 0; i < IDENTITIES; i++) {
      for (const [w, n] of r.admitted[i]!) admitted[i]!.set(w, (admitted[i]!.get(w) ?? 0) + n);
      for (const [w, n] of r.admittedDegraded[i]!) admittedDegraded[i]!.set(w, (admittedDegraded[i]!.get(w) ?? 0) + n);
      for (const [w, n] of r.lateAdmitted[i]!) lateAdmitted[i]!.set(w, (lateAdmitted[i]!.get(w) ?? 0) + n);
      for (const [w, n] of r.lateDegraded[i]!) lateDegraded[i]!.set(w, (lateDegraded[i]!.get(w) ?? 0) + n);
      decisions[i]! += r.decisions[i]!;
      remoteCalls[i]! += r.remoteCalls[i]!;
    }
    for (const [k, v] of Object.entries(r.stats) as Array<[keyof TierStats, number]>) stats[k] = (stats[k] ?? 0) + v;
    total += r.latencies.length;
  }
  const all = new Float32Array(total);
  let at = 0;
  for (const r of reports) {
    all.set(r.latencies, at);
    at += r.latencies.length;
  }
  all.sort();
  const q = (p: number) => all[Math.min(all.length - 1, Math.floor(p * all.length))] ?? NaN;
  return { reports, startAt, stopAt, admitted, admittedDegraded, lateAdmitted, lateDegraded, decisions, remoteCalls, stats, latency: { p50: q(0.5), p99: q(0.99), max: all[all.length - 1] ?? NaN }, wallMs };
}

/** Every (identity, window, admitted) triple of a per-identity map list, the degraded and non-degraded ones summed when both are given. */
function cells(...maps: Array<Array<Map<number, number>>>): Array<{ identity: number; window: number; admitted: number }> {
  const out = new Map<string, { identity: number; window: number; admitted: number }>();
  for (const list of maps) {
    list.forEach((m, identity) => {
      for (const [window, n] of m) {
        const key = `${identity}:${window}`;
        const cell = out.get(key) ?? { identity, window, admitted: 0 };
        cell.admitted += n;
        out.set(key, cell);
      }
    });
  }
  return [...out.values()];
}

/** Degraded answers by error code, summed over the processes. */
function degradedBy(fleet: Fleet): Record<string, number> {
  const out: Record<string, number> = {};
  for (const r of fleet.reports) for (const [k, v] of Object.entries(r.degradedBy)) out[k] = (out[k] ?? 0) + v;
  return out;
}

/** Decisions completed per `ms` from the start, fleet-wide (degraded ones as +n). */
function throughput(fleet: Fleet, ms: number): string[] {
  const ok = new Map<number, number>();
  const bad = new Map<number, number>();
  for (const r of fleet.reports) {
    for (const [at, n, d] of r.timeline) {
      const k = Math.floor((at - fleet.startAt) / ms);
      ok.set(k, (ok.get(k) ?? 0) + n);
      bad.set(k, (bad.get(k) ?? 0) + d);
    }
  }
  return [...ok.keys()].sort((a, b) => a - b).map((k) => `${ok.get(k)}${bad.get(k) ? `+${bad.get(k)}` : ''}`);
}

const fmt = (n: number, digits = 2) => (Number.isFinite(n) ? n.toFixed(digits) : String(n));
const rows: string[] = [];

function printTable(title: string, header: string[], body: string[][]): void {
  const widths = header.map((h, i) => Math.max(h.length, ...body.map((r) => r[i]!.length)));
  const line = (r: string[]) => `| ${r.map((c, i) => c.padEnd(widths[i]!)).join(' | ')} |`;
  console.log([title, line(header), `|${widths.map((w) => '-'.repeat(w + 2)).join('|')}|`, ...body.map(line)].join('\n'));
}

// ---------------------------------------------------------------------------------------------------------------

const LIMIT = 500;
const WINDOW_MS = 1000;
const WINDOWS = 3;
/**
 * Remote calls per decision, most allowed: on the hot identity (every strategy), and over all decisions (lease and
 * async; deny-cache decides every admission remotely, so a fleet of mostly cold identities stays near 0.5). Going
 * remote every time is 1. Measured on a loaded 2-core machine (see the printed table): hot 0.03–0.12 (deny-cache:
 * the limit's admissions are remote, so it grows as throughput falls), 0.0001–0.001 (lease), 0.004–0.012 (async);
 * all 0.005–0.03 (lease), 0.03–0.06 (async).
 */
const HOT_REMOTE_RATIO_MAX: Record<TierStrategy, number> = { 'deny-cache': 0.25, lease: 0.05, async: 0.05 };
const ALL_REMOTE_RATIO_MAX: Partial<Record<TierStrategy, number>> = { lease: 0.1, async: 0.2 };
/** The hot identity must get at least 95 % of limit × windows over the whole windows of the run. */
const HOT_FILL_MIN = 0.95;

describe(`tiered fleet: ${PROCESSES} processes × ${IN_FLIGHT} in flight, Zipf(${EXPONENT}) over ${IDENTITIES} identities, fixedWindow ${LIMIT}/${WINDOW_MS} ms`, () => {
  let server: RedisServer;
  const unhandled: unknown[] = [];
  const onUnhandled = (reason: unknown) => unhandled.push(reason);

  beforeAll(async () => {
    process.on('unhandledRejection', onUnhandled);
    server = await startRedis();
  });

  afterAll(async () => {
    await server?.stop();
    process.off('unhandledRejection', onUnhandled);
    if (rows.length > 0) {
      printTable(
        `[tiered fleet] ${PROCESSES} processes × ${IN_FLIGHT} in flight, limit ${LIMIT} per ${WINDOW_MS} ms, ${WINDOWS} whole windows per strategy`,
        ['strategy', 'hot max/window', 'worst overshoot (bound)', 'hot under-admission', 'remote/decision all', 'remote/decision hot', 'p50 ms', 'p99 ms', 'max ms', 'decisions', 'hot decisions'],
        rows.map((r) => r.split('\t')),
      );
    }
  });

  for (const strategy of STRATEGIES) {
    test(`${strategy}: admitted <= limit + ${slack(strategy)} for every identity and window; the tier answers locally; the hot identity reaches its limit`, { timeout: 20_000 }, async () => {
      const fleet = await runFleet({ port: server.port, strategy, limit: LIMIT, windowMs: WINDOW_MS, windows: WINDOWS, name: `fleet-${strategy}` });

      const all = cells(fleet.admitted);
      const worst = all.reduce((a, b) => (b.admitted > a.admitted ? b : a));
      const bound = LIMIT + slack(strategy);
      const over = all.filter((c) => c.admitted > bound).map((c) => ({ ...c, window: `start + ${c.window - fleet.startAt / WINDOW_MS}` }));

      const first = fleet.startAt / WINDOW_MS;
      const hot = fleet.admitted[HOT]!;
      const hotWhole = Array.from({ length: WINDOWS }, (_, k) => hot.get(first + k) ?? 0);
      const hotAdmitted = hotWhole.reduce((a, b) => a + b, 0);
      const hotMax = Math.max(...hot.values());
      const under = LIMIT * WINDOWS - hotAdmitted;
      const hotDecisions = fleet.decisions[HOT]!;
      const hotRatio = fleet.remoteCalls[HOT]! / hotDecisions;
      const ratio = fleet.stats.remoteCalls / fleet.stats.decisions;
      const decisions = fleet.decisions.reduce((a, b) => a + b, 0);

      rows.push(
        [
          strategy,
          `${hotMax} / ${LIMIT}`,
          `${worst.admitted - LIMIT} (id-${worst.identity}; bound +${slack(strategy)})`,
          `${under} of ${LIMIT * WINDOWS} (${fmt((100 * under) / (LIMIT * WINDOWS), 1)} %)`,
          fmt(ratio, 3),
          fmt(hotRatio, 4),
          fmt(fleet.latency.p50, 3),
          fmt(fleet.latency.p99, 2),
          fmt(fleet.latency.max, 1),
          String(decisions),
          String(hotDecisions),
        ].join('\t'),
      );
      console.log(
        `[tiered fleet] ${strategy}: hot per whole window ${hotWhole.join(', ')}; stats ${JSON.stringify(fleet.stats)}; ` +
          `close ${fleet.reports.map((r) => fmt(r.closeMs, 0)).join('/')} ms; wall ${fleet.wallMs} ms; degraded ${JSON.stringify(degradedBy(fleet))}; ` +
          `decisions per 250 ms ${throughput(fleet, 250).join(' ')}`,
      );

      for (const r of fleet.reports) {
        expect(r.unhandled).toEqual([]);
        expect(r.limiterFailures).toBe(0);
        expect(r.degradedBy).toEqual({});
      }
      expect(unhandled).toEqual([]);
      expect(over, `identity-windows above ${bound} (by decision.now)`).toEqual([]);
      // The hot identity was far over its limit (else the checks below prove nothing) ...
      expect(hotDecisions).toBeGreaterThan(3 * LIMIT * WINDOWS);
      // ... the tier answered it from memory, not remotely every time ...
      expect(hotRatio).toBeLessThan(HOT_REMOTE_RATIO_MAX[strategy]);
      if (ALL_REMOTE_RATIO_MAX[strategy] !== undefined) expect(ratio).toBeLessThan(ALL_REMOTE_RATIO_MAX[strategy]);
      // ... and it still got about its limit over the run's whole windows (not everything was refused).
      expect(hotAdmitted).toBeGreaterThanOrEqual(HOT_FILL_MIN * LIMIT * WINDOWS);
    });
  }
});

// ---------------------------------------------------------------------------------------------------------------

const OUT_LIMIT = 200;
/** Short windows, so that whole windows fall inside a one-second outage. */
const OUT_WINDOW_MS = 250;
const OUT_WINDOWS = 14;
/** The server is killed this long after the start (a window boundary + 50 ms), and restarted this long after the kill. */
const KILL_AFTER_MS = 4 * OUT_WINDOW_MS + 50;
const OUTAGE_MS = 1000;
/**
 * Back to non-degraded within this long of the restart (server answering PING). The tier's breaker cools down for
 * 500 ms and ioredis reconnects on its own backoff (50 ms more per attempt): measured 0.26–0.86 s, once 1.1 s on a
 * heavily loaded machine; see the table.
 */
const RECOVERY_MAX_MS = 1500;
/** The fleet's local share per window: each process limits on floor(limit ÷ 4). */
const SHARE = PROCESSES * Math.floor(OUT_LIMIT / PROCESSES);
const outageRows: string[] = [];

describe(`tiered fleet, redis-server killed for ${OUTAGE_MS} ms mid-run: fixedWindow ${OUT_LIMIT}/${OUT_WINDOW_MS} ms`, () => {
  let server: RedisServer;
  const unhandled: unknown[] = [];
  const onUnhandled = (reason: unknown) => unhandled.push(reason);

  beforeAll(async () => {
    process.on('unhandledRejection', onUnhandled);
    server = await startRedis();
  });

  afterAll(async () => {
    await server?.stop();
    process.off('unhandledRejection', onUnhandled);
    if (outageRows.length > 0) {
      printTable(
        `[tiered fleet outage] limit ${OUT_LIMIT} per ${OUT_WINDOW_MS} ms, server killed ${KILL_AFTER_MS} ms in, restarted ${OUTAGE_MS} ms later; local share ${SHARE} per window`,
        [
          'strategy',
          'degraded decisions',
          'outage: degraded / non-degr. / non-degr. admitted',
          'kill→1st degraded ms',
          'restart→last degraded ms',
          'whole outage windows: max admitted (bound)',
          'max degraded admitted/window (bound)',
          'max non-degr. admitted/window (bound)',
          'max total/window',
          'limiter deadline hits',
        ],
        outageRows.map((r) => r.split('\t')),
      );
    }
  });

  for (const strategy of STRATEGIES) {
    test(`${strategy}: no crash, degraded during the outage only, recovered within ${RECOVERY_MAX_MS} ms of the restart, per window within the local share`, { timeout: 25_000 }, async () => {
      let killAt = 0;
      let restartAt = 0;
      let readyAt = 0;
      const fleet = await runFleet({
        port: server.port,
        strategy,
        limit: OUT_LIMIT,
        windowMs: OUT_WINDOW_MS,
        windows: OUT_WINDOWS,
        name: `outage-${strategy}`,
        async during(startAt) {
          await sleep(startAt + KILL_AFTER_MS - Date.now());
          killAt = Date.now();
          await server.kill();
          await sleep(killAt + OUTAGE_MS - Date.now());
          restartAt = Date.now();
          await server.restart(); // same port, empty (no persistence): the script is loaded again
          readyAt = Date.now();
        },
      });

      // No crash (runFleet throws on one), no unhandled rejection in any process.
      for (const r of fleet.reports) expect(r.unhandled).toEqual([]);
      expect(unhandled).toEqual([]);

      // Degraded answers came, during the outage only, and stopped within RECOVERY_MAX_MS of the restart.
      const degraded = fleet.reports.reduce((a, r) => a + r.degraded, 0);
      const firstDegraded = Math.min(...fleet.reports.map((r) => r.firstDegradedAt));
      const lastDegraded = Math.max(...fleet.reports.map((r) => r.lastDegradedAt));
      const slots = fleet.reports.flatMap((r) => r.timeline);
      const during = slots.filter(([at]) => at >= killAt && at + 50 <= restartAt);
      const duringDegraded = during.reduce((a, s) => a + s[2], 0);
      const duringOk = during.reduce((a, s) => a + s[1], 0);
      const duringOkAdmitted = during.reduce((a, s) => a + s[3], 0);
      // Back on the shared state: from the breaker's cooldown (500 ms) after the restart, plus the client's reconnect
      // interval (50 ms, fleet-worker.mjs) and a slot of margin, on
      // to the end of the run, decisions are overwhelmingly non-degraded. (A machine starved of CPU can still time a
      // call out later: that is a fresh degradation, not a failed recovery.)
      const settled = slots.filter(([at]) => at >= readyAt + 650);
      const settledOk = settled.reduce((a, s) => a + s[1], 0);
      const settledDegraded = settled.reduce((a, s) => a + s[2], 0);
      const firstOkAfterReady = Math.min(...slots.filter(([at, ok]) => at >= readyAt && ok > 0).map(([at]) => at));
      const limiterFailures = fleet.reports.reduce((a, r) => a + r.limiterFailures, 0);

      // Per identity and window: the local share admits at most floor(limit / 4) per process; what the shared store
      // answered stays within the limit (+ the async slack); in windows wholly inside the outage, the sum does.
      const first = fleet.startAt / OUT_WINDOW_MS;
      const whole = new Set<number>();
      for (let w = first; w < first + OUT_WINDOWS; w++) if (w * OUT_WINDOW_MS >= killAt && (w + 1) * OUT_WINDOW_MS <= restartAt) whole.add(w);
      // A degraded answer that waited for the tier's deadline (150 ms) is stamped with the time its request was made,
      // and may have been counted by the local share in the next window: such answers (decision.now's window had
      // ended when they came) are allowed on top of the share, and counted (the table's "late").
      const late = (identity: number, window: number) => fleet.lateDegraded[identity]!.get(window) ?? 0;
      const degradedCells = cells(fleet.admittedDegraded);
      const okCells = cells(fleet.admitted);
      const totalCells = cells(fleet.admitted, fleet.admittedDegraded);
      const outageCells = totalCells.filter((c) => whole.has(c.window));
      const max = (list: Array<{ admitted: number }>) => list.reduce((a, c) => Math.max(a, c.admitted), 0);
      const lateTotal = cells(fleet.lateDegraded).reduce((a, c) => a + c.admitted, 0);
      const lateMax = max(cells(fleet.lateDegraded));
      const outageBound = SHARE + slack(strategy);
      const hotSeries = Array.from({ length: OUT_WINDOWS + 1 }, (_, k) => {
        const w = first + k;
        const ok = fleet.admitted[HOT]!.get(w) ?? 0;
        const bad = fleet.admittedDegraded[HOT]!.get(w) ?? 0;
        return `${ok}+${bad}${whole.has(w) ? '*' : ''}`;
      });

      outageRows.push(
        [
          strategy,
          `${degraded} of ${fleet.stats.decisions}`,
          `${duringDegraded} / ${duringOk} / ${duringOkAdmitted}`,
          String(firstDegraded - killAt),
          String(lastDegraded - readyAt),
          `${max(outageCells)} (${outageBound}) in ${whole.size} windows`,
          `${max(degradedCells)} (${SHARE} + late; late ${lateTotal}, max ${lateMax}/window)`,
          `${max(okCells)} (${OUT_LIMIT + slack(strategy)})`,
          `${max(totalCells)}`,
          String(limiterFailures),
        ].join('\t'),
      );
      console.log(
        `[tiered fleet outage] ${strategy}: killed at +${killAt - fleet.startAt} ms, restarted at +${restartAt - fleet.startAt}, ready +${readyAt - fleet.startAt} ms; ` +
          `hot per window (non-degraded+degraded, * wholly in the outage): ${hotSeries.join(' ')}; stats ${JSON.stringify(fleet.stats)}; ` +
          `degraded ${JSON.stringify(degradedBy(fleet))}, before the kill ${slots.filter(([at]) => at + 50 <= killAt).reduce((a, s) => a + s[2], 0)}; decisions per 250 ms ${throughput(fleet, 250).join(' ')}`,
      );

      expect(degraded).toBeGreaterThan(0);
      expect(duringDegraded).toBeGreaterThan(0);
      expect(firstDegraded).toBeGreaterThanOrEqual(killAt);
      expect(firstOkAfterReady - readyAt).toBeLessThanOrEqual(RECOVERY_MAX_MS);
      expect(settledOk).toBeGreaterThan(0);
      expect(settledOk).toBeGreaterThan(4 * settledDegraded); // at least 80% non-degraded once recovered
      expect(whole.size).toBeGreaterThanOrEqual(2);
      expect(degradedCells.filter((c) => c.admitted - late(c.identity, c.window) > SHARE), `identity-windows above the local share ${SHARE}`).toEqual([]);
      expect(okCells.filter((c) => c.admitted > OUT_LIMIT + slack(strategy)), `identity-windows above ${OUT_LIMIT + slack(strategy)} (non-degraded)`).toEqual([]);
      expect(outageCells.filter((c) => c.admitted - late(c.identity, c.window) > outageBound), `identity-windows wholly in the outage above ${outageBound}`).toEqual([]);
      // The limiter's own deadline (250 ms) answered a few (fail closed here; see the table's last column): the tier
      // chains remote calls (async: flush, then decide; lease: wait for another call's batch, then fetch), each
      // under its own 150 ms. Bounded loosely, so that it cannot become the way the outage is answered.
      expect(limiterFailures).toBeLessThan(0.01 * degraded);
    });
  }
});

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, Math.max(0, ms)));
}
