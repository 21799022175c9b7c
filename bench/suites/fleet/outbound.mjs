// The fleet's outbound part: 8 worker processes × 4 loops calling one third party that allows 50 requests in any
// sliding second, each call waiting for its turn, then the third party halves its limit to 25 and answers only
// `429` + `Retry-After` (no limit header): a bare 429. Three contestants, on the same mock (each counted apart, as a
// client of its own) and the same redis-server this part starts; all their processes are started first, then the
// contestants run one after the other (24 busy processes at once starve a 2-core machine). Every contestant starts
// cold: its processes send nothing to Redis or the mock before its start (outbound/learn-worker.mjs).
// - sluice, shared learning: the fleet configuration of packages/http/README.md as written there
//   (thirdPartyLimit({ requests: 50, per: '1s' }) on redisStore, onStoreError 'deny', createThrottledFetch with
//   learn: { source: redisConfigSource(redis) }, watchConfig on the same source, every other option at its default);
// - sluice, pushBack alone: the same with learn: false (Retry-After pushes the shared queue back, the rate stays);
// - reference: written here (outbound/learn-worker.mjs): a rate (98% of the limit) and a next-slot time in Redis,
//   the rate halved on a 429 at most once per 2.5 s fleet-wide.
// Judged at the third party, on its clock, over the whole run from its first request: 429s before the drop, the
// most requests in any sliding second before it, the share of the allowance answered before it; after the drop,
// the 429s, the last one, and the requests answered per sliding second once the contestant settled (from 1 s after
// its last 429) as a share of the new limit; and the waits (enqueue to answer, the workers' clocks).
import { fork } from 'node:child_process';
import { Redis } from 'ioredis';
import { target } from '../../lib/report.mjs';
import { startSlidingThirdParty } from '../outbound/mock.mjs';
import { startRedisServer } from '../outbound/redis-server.mjs';

export const description =
  'a fleet calling a third party that drops to half its limit with bare 429s: sluice limiter.wait + shared learning vs pushBack alone vs a reference that halves a Redis rate';
export const builds = ['@sluice/core', '@sluice/http', '@sluice/redis'];

const WORKER = new URL('../outbound/learn-worker.mjs', import.meta.url);
/** The identity the throttled fetch keys the mock by (its default: the URL's host). */
const IDENTITY = (port) => `127.0.0.1:${port}`;
const SHARED = 'sluice wait + shared learning';
const PUSHBACK = 'sluice wait + pushBack alone';
const REFERENCE = 'reference: halve a Redis rate on a 429';
// Run in this order: the first meets a machine still busy from starting 24 processes (measured: the contestant run
// first sent 20-35% fewer requests in the steady phase than the same code run second), so the old behaviour goes first.
const CONTESTANTS = [
  { name: PUSHBACK, kind: 'pushback' },
  { name: SHARED, kind: 'shared' },
  { name: REFERENCE, kind: 'reference' },
];
/** Targets for shared learning: no 429 later than this after the drop, and these shares of the limits used. */
const SETTLE_BOUND_MS = 2000;
const USE_FLOOR_PCT = 90;
const USE_BEFORE_FLOOR_PCT = 95;
/** Utilisation after settling is measured only over at least this long a stretch. */
const MIN_MEASURED_MS = 2000;

/** @param {{ options: Record<string, string | true>, log: (line: string) => void }} context */
export async function run({ options, log }) {
  const quick = Boolean(options.quick);
  const limit = Number(options.limit ?? 50);
  const lower = Math.floor(limit / 2);
  const rate = Math.floor(limit * 0.98);
  const workers = Number(options.workers ?? 8);
  const jobs = Number(options.jobs ?? 4);
  const steadyMs = Number(options.steady ?? (quick ? 3 : 4)) * 1000;
  const afterMs = Number(options.after ?? (quick ? 6 : 10)) * 1000;

  const server = await startRedisServer();
  const mock = await startSlidingThirdParty({ limit });
  const admin = new Redis({ host: '127.0.0.1', port: server.port });
  // The third party is a server that has been running: its request handling is compiled before the fleets call it
  // (from this process, as a client of its own that no contestant's count includes). The workers start cold.
  for (let i = 0; i < 50; i++) await (await fetch(`http://127.0.0.1:${mock.port}/call`, { headers: { 'x-client': 'warm-up' } })).text();
  log(
    `redis-server ${server.version} on port ${server.port} (pid ${server.pid}); mock third party on port ${mock.port}: ${limit} per sliding second, then ${lower}, bare 429 + Retry-After`,
  );
  const children = [];
  try {
    const stamp = Date.now();
    // --only=shared,reference runs some; the order given is the order run (a contestant run first meets a machine
    // still busy from starting the processes).
    const kinds = typeof options.only === 'string' ? options.only.split(',') : CONTESTANTS.map((c) => c.kind);
    const runs = kinds
      .map(
        (kind) =>
          CONTESTANTS.find((c) => c.kind === kind) ??
          raise(`--only: unknown contestant ${kind}; known: ${CONTESTANTS.map((c) => c.kind).join(', ')}`),
      )
      .map((c) => ({ ...c, id: `fleet-outbound-${c.kind}-${stamp}`, results: [], children: [], done: [] }));
    const ready = [];
    for (const contestant of runs) {
      for (let i = 0; i < workers; i++) {
        const child = fork(
          WORKER,
          [contestant.kind, String(server.port), String(mock.port), String(jobs), String(limit), String(rate), contestant.id],
          {
            stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
            execArgv: [],
          },
        );
        children.push(child);
        contestant.children.push(child);
        const exited = new Promise((resolve, reject) => {
          child.once('error', reject);
          child.once('exit', (code, signal) =>
            code === 0 ? resolve() : reject(new Error(`${contestant.kind} worker ${i} exited with ${signal ?? code}`)),
          );
        });
        exited.catch(() => {}); // awaited through `ready` and `done`
        ready.push(Promise.race([new Promise((resolve) => child.once('message', resolve)), exited]));
        contestant.done.push(
          Promise.all([new Promise((resolve) => child.on('message', (m) => m.waits !== undefined && resolve(m))), exited]).then(([m]) =>
            contestant.results.push(m),
          ),
        );
      }
    }
    await withTimeout(Promise.all(ready), 60_000, 'the workers did not get ready within 60 s');
    // Every write of the shared learner's limit, as announced (each write PUBLISHes on the document's key).
    const writes = new Map(); // contestant id -> [{ limit, updatedAt }]
    const subscriber = new Redis({ host: '127.0.0.1', port: server.port });
    let reads = Promise.resolve();
    subscriber.on(
      'message',
      (channel) =>
        (reads = reads.then(async () => {
          const document = JSON.parse((await admin.get(channel)) ?? '{}');
          const id = channel.slice('sluice:config:'.length);
          if (!writes.has(id)) writes.set(id, []);
          if (writes.get(id).at(-1)?.revision !== document.revision)
            writes.get(id).push({
              revision: document.revision,
              updatedAt: document.updatedAt,
              limit: document.quotas?.[IDENTITY(mock.port)]?.[0]?.limit ?? limit,
            });
        })),
    );
    await subscriber.subscribe(...runs.filter((c) => c.kind === 'shared').map((c) => `sluice:config:${c.id}`));
    for (const contestant of runs) {
      contestant.startAt = Date.now() + 1000;
      contestant.dropAt = contestant.startAt + steadyMs;
      contestant.endAt = contestant.dropAt + afterMs;
      mock.dropAt(contestant.dropAt, lower, contestant.id);
      log(
        `${contestant.name}: ${workers} processes × ${jobs} loops, ${steadyMs / 1000} s at ${limit}/s, then ${afterMs / 1000} s at ${lower}/s`,
      );
      for (const child of contestant.children) child.send({ startAt: contestant.startAt, endAt: contestant.endAt });
      await withTimeout(Promise.all(contestant.done), steadyMs + afterMs + 60_000, `the ${contestant.kind} workers did not finish`);
    }
    await reads;
    subscriber.disconnect();

    const rows = [];
    const timelines = [];
    const refusalLines = [];
    for (const contestant of runs) {
      const arrivals = mock.arrivals(contestant.id);
      const { startAt, dropAt, endAt } = contestant;
      const seen = judge(arrivals, { startAt, dropAt, endAt, limit, lower });
      const waits = contestant.results.flatMap((r) => r.waits);
      const after = waits.filter(([at]) => at >= dropAt).map(([, ms]) => ms);
      const errors = contestant.results.reduce((n, r) => n + r.errorCount, 0);
      if (errors > 0)
        log(
          `${contestant.name}: ${errors} calls failed, e.g. ${contestant.results
            .flatMap((r) => r.errors)
            .slice(0, 3)
            .join(' | ')}`,
        );
      rows.push({
        name: contestant.name,
        nsPerOp: seen.settledPerSecond > 0 ? Math.round(1e9 / seen.settledPerSecond) : NaN,
        opsPerSec: Math.round(seen.settledPerSecond * 10) / 10,
        ...seen.row,
        waitP50Ms: quantile(
          waits.map(([, ms]) => ms),
          0.5,
        ),
        waitP99Ms: quantile(
          waits.map(([, ms]) => ms),
          0.99,
        ),
        afterP99Ms: quantile(after, 0.99),
        finalLimit: await finalLimit(admin, contestant, { limit, rate, identity: IDENTITY(mock.port) }),
        errors,
      });
      refusalLines.push(
        `${contestant.name}: ${seen.refusedAfterMs.length === 0 ? 'none' : `${seen.refusedAfterMs.slice(0, 30).join(' ')}${seen.refusedAfterMs.length > 30 ? ` … (${seen.refusedAfterMs.length})` : ''}`}`,
      );
      timelines.push(
        `${contestant.name.padEnd(40)} ${seen.perSecond.map((s) => `${String(s.ok).padStart(2)}${s.refused > 0 ? `+${s.refused}` : ''}`.padEnd(6)).join('')}`,
      );
    }

    const cutLines = runs
      .filter((c) => c.kind === 'shared')
      .map(
        (c) =>
          `${c.name}: ${(writes.get(c.id) ?? []).map((w) => `${w.limit}/s at ${w.updatedAt - c.dropAt >= 0 ? '+' : ''}${w.updatedAt - c.dropAt} ms`).join(', ') || 'none'}`,
      );
    const none = { before429: NaN, maxBefore: NaN, beforeUsePct: NaN, lastRefusalMs: NaN, settledUsePct: NaN };
    const shared = rows.find((r) => r.name === SHARED) ?? none;
    const reference = rows.find((r) => r.name === REFERENCE) ?? none;
    const ms = (v) => (Number.isFinite(v) ? `${v} ms` : 'never (429s to the end)');
    const percent = (v) => (Number.isFinite(v) ? `${v.toFixed(1)}%` : '-');
    const targets = [
      target(`${SHARED}: no 429 before the drop`, shared.before429, '<=', 0, (v) => `${v} (reference ${reference.before429})`),
      target(
        `${SHARED}: no sliding second over ${limit} before the drop, from the first request`,
        shared.maxBefore,
        '<=',
        limit,
        (v) => `most in one sliding second ${v} (reference ${reference.maxBefore})`,
      ),
      target(
        `${SHARED}: >= ${USE_BEFORE_FLOOR_PCT}% of ${limit}/s answered before the drop, from the first request`,
        shared.beforeUsePct,
        '>=',
        USE_BEFORE_FLOOR_PCT,
        (v) => `${percent(v)} (reference ${percent(reference.beforeUsePct)})`,
      ),
      target(
        `${SHARED}: no 429 more than ${SETTLE_BOUND_MS / 1000} s after the drop`,
        shared.lastRefusalMs,
        '<=',
        SETTLE_BOUND_MS,
        (v) => `last at ${ms(v)} (reference ${ms(reference.lastRefusalMs)})`,
      ),
      target(
        `${SHARED}: >= ${USE_FLOOR_PCT}% of the new ${lower}/s used after settling`,
        shared.settledUsePct,
        '>=',
        USE_FLOOR_PCT,
        (v) => `${percent(v)} (reference ${percent(reference.settledUsePct)})`,
      ),
    ];
    const pct = (v) => (Number.isFinite(v) ? `${v.toFixed(1)}%` : '-');
    return {
      title: `Fleet outbound: ${workers} worker processes × ${jobs} loops per contestant, one after the other, one mock third party (${limit} per sliding second, then ${lower} with bare 429 + Retry-After) and one local redis-server ${server.version}; ${steadyMs / 1000} s steady, ${afterMs / 1000} s after the drop`,
      rows,
      columns: [
        { key: 'firstMs', label: 'first ms' },
        { key: 'beforeUsePct', label: `use of ${limit}/s`, format: pct },
        { key: 'maxBefore', label: 'max 1 s' },
        { key: 'slackBeforeMs', label: 'slack ms', format: (v) => (Number.isFinite(v) ? String(v) : '-') },
        { key: 'before429', label: '429s before' },
        { key: 'after429', label: '429s after' },
        { key: 'lastRefusalMs', label: 'last 429 ms', format: (v) => (Number.isFinite(v) ? String(v) : 'end') },
        { key: 'settledUsePct', label: `use of ${lower}/s`, format: pct },
        { key: 'settledMinPerSecond', label: 'min/s', format: (v) => (Number.isFinite(v) ? String(v) : '-') },
        { key: 'settledMaxPerSecond', label: 'max/s', format: (v) => (Number.isFinite(v) ? String(v) : '-') },
        { key: 'waitP50Ms', label: 'wait p50 ms' },
        { key: 'waitP99Ms', label: 'wait p99 ms' },
        { key: 'afterP99Ms', label: 'p99 after ms' },
        { key: 'finalLimit', label: 'limit at end' },
      ],
      sections: [
        {
          heading: 'Answered (+refused) per second at the third party, from the start (the drop is at second ' + steadyMs / 1000 + ')',
          lines: timelines,
        },
        { heading: "429s after the drop, ms from it (the third party's clock)", lines: refusalLines },
        { heading: "Writes of the shared limit to Redis (the writer's clock, from the drop; one per cut)", lines: cutLines },
      ],
      targets,
      notes: [
        `Configurations. sluice, as packages/http/README.md shows it for a fleet: createLimiter({ store: redisStore(ioredis), name, rules: thirdPartyLimit({ requests: ${limit}, per: '1s' }), onStoreError: 'deny' }), createThrottledFetch({ limiter, maxWait: '30s', learn }) with learn = { source: redisConfigSource(ioredis) } and watchConfig(limiter, redisConfigSource(ioredis)) (shared learning), or learn: false (pushBack alone); every other option at its default (the identity is the URL's host, the fetch is the global one). Reference: one Lua call books the next slot 1/${rate} s after the last (Redis TIME, µs); on a 429, SET NX PX 2500 and, if set, the rate stored in Redis is halved.`,
        '"first ms": from the start time the parent gave to the first request the third party saw (connections, scripts and modules load in it: the processes start cold). "use of N/s": requests the third party answered ÷ (N × the time): before the drop, from the first request to the drop; after it, over the stretch from 1 s after the contestant\'s last 429 to the end (the sliding second then holds only settled traffic), shown only when that stretch is 2 s or more. "max 1 s": the most requests that arrived in any sliding second (the 1000 ms up to an arrival, as the third party counts) before the drop; "slack ms": how much closer together the busiest run of limit + 1 consecutive requests before the drop could have arrived before one second held limit + 1 (negative: it did). "min/s" and "max/s": the fewest answered and the most arrived in any sliding second of the settled stretch.',
        '"last 429 ms": the third party\'s time of the last refusal after the drop, counted from the drop; "end" when refusals went on into the last 2 s. "wait": enqueue to answer on the workers\' clocks, all calls ("p99 after": calls answered after the drop). "limit at end": the rate each fleet was sending at (sluice: the learned quota stored in Redis; reference: its Redis rate).',
        `The shared learner probes upward only after ${30} quiet windows (30 s here), later than this run: a probe that is refused costs a burst of 429s and goes back (see packages/core/README.md).`,
      ],
      data: { limit, lower, rate, workers, jobs, steadyMs, afterMs },
    };
  } finally {
    for (const child of children) if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
    admin.disconnect();
    await mock.close();
    await server.stop();
  }
}

/** The most arrivals in any sliding second (the 1000 ms up to and including an arrival, as the mock counts) among `times`. */
function maxInSlidingSecond(times) {
  let most = 0;
  for (let i = 0, from = 0; i < times.length; i++) {
    while (times[from] <= times[i] - 1000) from++;
    most = Math.max(most, i - from + 1);
  }
  return most;
}

/**
 * How far the busiest stretch of `limit + 1` consecutive arrivals was from fitting in one sliding second: the least
 * (arrival k + limit) − (arrival k) − 1000 ms; negative when some second held more than `limit`.
 */
function slackMs(times, limit) {
  let least = Infinity;
  for (let k = 0; k + limit < times.length; k++) least = Math.min(least, times[k + limit] - times[k] - 1000);
  return least;
}

/** What the third party saw from one contestant: the row's counts, the settled rate and a per-second timeline. */
function judge(arrivals, { startAt, dropAt, endAt, limit, lower }) {
  const first = arrivals[0]?.at ?? startAt;
  const before = arrivals.filter((a) => a.at < dropAt);
  const after = arrivals.filter((a) => a.at >= dropAt);
  const refusedAfter = after.filter((a) => a.status === 429);
  const lastRefusal = refusedAfter.at(-1)?.at;
  const settledFrom = (lastRefusal ?? dropAt) + 1000;
  const measured = endAt - settledFrom;
  const ok = arrivals.filter((a) => a.status === 200).map((a) => a.at);
  const answeredIn = (from, to) => ok.filter((at) => at > from && at <= to).length;
  let settledUsePct = NaN;
  let settledMinPerSecond = NaN;
  let settledMaxPerSecond = NaN;
  let settledPerSecond = NaN;
  if (measured >= MIN_MEASURED_MS) {
    settledPerSecond = answeredIn(settledFrom, endAt) / (measured / 1000);
    settledUsePct = Math.round((settledPerSecond / lower) * 1000) / 10;
    settledMinPerSecond = Infinity;
    for (let t = settledFrom + 1000; t <= endAt; t += 100) settledMinPerSecond = Math.min(settledMinPerSecond, answeredIn(t - 1000, t));
    settledMaxPerSecond = maxInSlidingSecond(arrivals.filter((a) => a.at > settledFrom).map((a) => a.at));
  }
  const perSecond = [];
  for (let t = startAt; t < endAt; t += 1000) {
    const inSecond = arrivals.filter((a) => a.at >= t && a.at < t + 1000);
    perSecond.push({ ok: inSecond.filter((a) => a.status === 200).length, refused: inSecond.filter((a) => a.status === 429).length });
  }
  // Answered before the drop, counted from the first request (at least one: `first` itself is a request).
  const answeredBefore = before.filter((a) => a.status === 200).length;
  return {
    perSecond,
    settledPerSecond,
    refusedAfterMs: refusedAfter.map((a) => a.at - dropAt),
    row: {
      requests: arrivals.length,
      firstMs: first - startAt,
      beforeUsePct: Math.round((answeredBefore / (limit * ((dropAt - first) / 1000))) * 1000) / 10,
      maxBefore: maxInSlidingSecond(before.map((a) => a.at)),
      slackBeforeMs: slackMs(
        before.map((a) => a.at),
        limit,
      ),
      before429: before.filter((a) => a.status === 429).length,
      after429: refusedAfter.length,
      lastRefusalMs: lastRefusal === undefined ? 0 : lastRefusal > endAt - MIN_MEASURED_MS ? Infinity : lastRefusal - dropAt,
      settledUsePct,
      settledMinPerSecond,
      settledMaxPerSecond,
    },
  };
}

/** The rate a contestant's fleet was sending at when the run ended, as stored in Redis. */
async function finalLimit(admin, contestant, { limit, rate, identity }) {
  if (contestant.kind === 'reference') return Number(await admin.get(`reference:{${contestant.id}}:rate`)) || rate;
  if (contestant.kind === 'pushback') return limit;
  const text = await admin.get(`sluice:config:${contestant.id}`);
  const learned = text === null ? undefined : JSON.parse(text).quotas?.[identity]?.[0]?.limit;
  return learned ?? limit;
}

function raise(message) {
  throw new Error(message);
}

function quantile(values, q) {
  if (values.length === 0) return NaN;
  const sorted = [...values].sort((a, b) => a - b);
  return Math.round(sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))]);
}

function withTimeout(promise, ms, message) {
  let timer;
  return Promise.race([promise, new Promise((_, reject) => (timer = setTimeout(() => reject(new Error(message)), ms)))]).finally(() =>
    clearTimeout(timer),
  );
}
