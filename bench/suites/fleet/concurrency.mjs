// The fleet's concurrency part: sluice's concurrency limiter on redisStore against a small reference semaphore (a
// Lua sorted set: drop expired holders, ZCARD, ZADD on Redis TIME; release is ZREM; on a plain ioredis connection
// and on an auto-pipelined one), side by side on one
// redis-server this part starts. 4 worker processes (more than this machine's cores), each with 64 loops that pick
// one of 3 tenants, acquire, hold the slot 1 ms and release it; a refusal retries at once; limit 10 per tenant, ttl
// 1 s. Rounds alternate the contestants (rotating which goes first), after one warm-up round each.
//
// Measured by the callers' wall clocks only: acquires/s (every acquire answered, granted or refused, all
// processes), grants/s, occupancy (mean slots held ÷ limit, from the held intervals), acquire latency p50/p99
// (performance.now() around each call). Exactness is judged independently of both executors: each holder records
// [Date.now() after its acquire answered, Date.now() before its release was sent]; the slot was certainly held
// from 1 ms after the first (Date.now() counts whole ms) to the second, and a sweep over those certain intervals
// gives the most holders any tenant had at once. An overlap that is only possible is never counted.
//
// Then one more round for sluice and the plain reference in which one worker (holding each slot 200 ms in that
// round, and announcing each slot's id) is SIGKILLed mid-run: the slots it held must free by themselves when their
// leases expire (ttl 1 s), none before; the time until all are gone is polled. After every round the tenants' keys must be gone (nothing leaked), and after the kill rounds,
// once their leases expired.
import { fork } from 'node:child_process';
import { Redis } from 'ioredis';
import { target } from '../../lib/report.mjs';
import { median, spreadPct } from '../../lib/stats.mjs';
import { addRatios, formatInteger, formatRatio } from '../../lib/table.mjs';
import { startRedisServer } from '../outbound/redis-server.mjs';

const WORKER = new URL('./concurrency-worker.mjs', import.meta.url);
const PROCESSES = 4;
const LOOPS = 64; // per process
const TENANTS = ['tenant-a', 'tenant-b', 'tenant-c'];
const LIMIT = 10;
const TTL_MS = 1000;
const HOLD_MS = 1;
const VICTIM_HOLD_MS = 200;
/** The worker's latency histogram: 10 µs buckets. */
const BUCKET_MS = 0.01;
/** How late a killed holder's slots may free: its ttl, plus this. */
const KILL_MARGIN_MS = 500;

const CONTESTANTS = [
  { key: 'sluice', name: 'sluice createConcurrencyLimiter (redisStore)', keyOf: (round, tenant) => `sluice:${round}:{${tenant}}:lease` },
  { key: 'reference', name: 'reference Lua sorted-set semaphore', keyOf: (round, tenant) => `reference:${round}:{${tenant}}` },
  {
    key: 'pipelined',
    name: 'reference, ioredis auto-pipelining',
    keyOf: (round, tenant) => `reference:${round}:{${tenant}}`,
    noKill: true,
  },
];

/** @param {{ options: Record<string, string | true>, log: (line: string) => void }} context */
export async function run({ options = {}, log = () => {} } = {}) {
  const quick = options.quick === true;
  const rounds = Number(options.rounds ?? (quick ? 1 : 3));
  const roundMs = Number(options.seconds ?? (quick ? 2 : 4)) * 1000;
  const killRoundMs = quick ? 2000 : 3000;
  const server = await startRedisServer();
  const admin = new Redis({ host: '127.0.0.1', port: server.port });
  const workers = [];
  let roundNumber = 0;
  try {
    for (let i = 0; i < PROCESSES; i++) workers.push(await startWorker(server.port));
    const results = Object.fromEntries(CONTESTANTS.map((c) => [c.key, { rounds: [], histogram: new Map(), kill: undefined }]));
    const runRound = async (contestant, durationMs, kill) => {
      const name = `r${++roundNumber}-${contestant.key}`;
      const round = await fleetRound({ workers, admin, contestant, name, durationMs, kill, seed: roundNumber });
      round.keysLeft = kill ? await keysLeftAfterExpiry(admin, contestant, name, round.killedAt) : await keysLeft(admin, contestant, name);
      return round;
    };

    log(
      `fleet concurrency: redis-server ${server.version} on port ${server.port}; ${PROCESSES} processes × ${LOOPS} loops, ${TENANTS.length} tenants, limit ${LIMIT}, warm-up`,
    );
    for (const contestant of CONTESTANTS) await runRound(contestant, 1000, false);
    for (let r = 0; r < rounds; r++) {
      const order = CONTESTANTS.map((_, i) => CONTESTANTS[(i + r) % CONTESTANTS.length]);
      for (const contestant of order) {
        const round = await runRound(contestant, roundMs, false);
        const result = results[contestant.key];
        result.rounds.push(round);
        for (const [bucket, count] of round.histogram) result.histogram.set(bucket, (result.histogram.get(bucket) ?? 0) + count);
        log(
          `  round ${r + 1}/${rounds} ${contestant.key}: ${formatInteger(round.acquiresPerSec)} acquires/s, occupancy ${round.occupancy.toFixed(2)}, most held ${round.maxHeld}`,
        );
      }
    }
    for (const contestant of CONTESTANTS.filter((c) => !c.noKill)) {
      const round = await runRound(contestant, killRoundMs, true);
      results[contestant.key].kill = round;
      log(
        `  SIGKILL round ${contestant.key}: ${round.victimSlots} slots held at the kill, expiring by ${round.expiresInMs} ms, all free ${round.freedMs} ms after it; keys left ${round.keysLeft}`,
      );
      workers[0] = await startWorker(server.port); // the killed one's replacement
    }
    const dbsize = await admin.dbsize();
    return report(results, { rounds, roundMs, killRoundMs, dbsize, version: server.version });
  } finally {
    await Promise.all(workers.map(stopWorker));
    admin.disconnect();
    await server.stop();
  }
}

function startWorker(port) {
  const child = fork(WORKER, [String(port)], { stdio: ['ignore', 'inherit', 'inherit', 'ipc'], execArgv: [] });
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error('a fleet concurrency worker was not ready within 10 s')), 10_000);
    child.once('exit', (code, signal) => reject(new Error(`a fleet concurrency worker exited (${signal ?? code}) before it was ready`)));
    child.once('message', () => {
      clearTimeout(timer);
      resolve(child);
    });
  });
}

async function stopWorker(child) {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise((resolve) => child.once('exit', resolve));
  child.send({ type: 'stop' });
  const timer = setTimeout(() => child.kill('SIGKILL'), 5000);
  await exited;
  clearTimeout(timer);
}

/** CPU time redis-server has used (user + system), µs. */
async function serverCpuUs(admin) {
  const info = await admin.info('cpu');
  const field = (name) => Number(new RegExp(`${name}:([\\d.]+)`).exec(info)?.[1] ?? Number.NaN);
  return (field('used_cpu_user') + field('used_cpu_sys')) * 1e6;
}

/** One timed round of one contestant on every worker; with `kill`, worker 0 is SIGKILLed halfway. */
async function fleetRound({ workers, admin, contestant, name, durationMs, kill, seed }) {
  const startAt = Date.now() + 100;
  const endAt = startAt + durationMs;
  const intervals = TENANTS.map(() => []);
  const add = (lists) => lists.forEach((pairs, t) => intervals[t].push(...pairs));
  const replies = workers.map(
    (child, index) =>
      new Promise((resolve, reject) => {
        const onMessage = (m) => {
          if (m.type === 'intervals') add(m.intervals);
          else if (m.type === 'error') reject(new Error(`worker ${child.pid}: ${m.message}`));
          else if (m.type === 'done') {
            child.off('message', onMessage);
            child.off('exit', onExit);
            if (m.intervals !== undefined) add(m.intervals);
            resolve(m);
          }
        };
        const onExit = () => (kill && index === 0 ? resolve(undefined) : reject(new Error(`worker ${child.pid} exited mid-round`)));
        child.on('message', onMessage);
        child.once('exit', onExit);
      }),
  );
  const serverCpuBefore = await serverCpuUs(admin);
  // In a kill round the victim holds its slots 200 ms (still well within the ttl), so it surely holds some when killed.
  workers.forEach((child, i) =>
    child.send({
      type: 'run',
      contestant: contestant.key,
      name,
      tenants: TENANTS,
      limit: LIMIT,
      ttlMs: TTL_MS,
      holdMs: kill && i === 0 ? VICTIM_HOLD_MS : HOLD_MS,
      announce: kill && i === 0,
      loops: LOOPS,
      endAt,
      stream: kill,
      seed: seed * 7919 + i,
    }),
  );
  let killed;
  if (kill) {
    const held = new Set();
    workers[0].on('message', (m) => (m.type === 'held' ? held.add(m.id) : m.type === 'freed' ? held.delete(m.id) : undefined));
    await new Promise((resolve) => setTimeout(resolve, startAt + durationMs / 2 - Date.now()));
    killed = killAndWatch(
      workers[0],
      held,
      admin,
      TENANTS.map((t) => contestant.keyOf(name, t)),
    );
  }
  const done = (await Promise.all(replies)).filter((m) => m !== undefined);
  const serverCpu = (await serverCpuUs(admin)) - serverCpuBefore;
  const freed = await killed;
  const elapsedS = (Math.max(...done.map((m) => m.endedAt)) - startAt) / 1000;
  const sum = (field) => done.reduce((total, m) => total + m[field], 0);
  const histogram = new Map();
  for (const m of done)
    for (let i = 0; i < m.histogram.length; i += 2)
      histogram.set(m.histogram[i], (histogram.get(m.histogram[i]) ?? 0) + m.histogram[i + 1]);
  const sweeps = intervals.map(sweep);
  const heldMs = intervals.reduce((total, pairs) => total + sumHeld(pairs), 0);
  return {
    acquiresPerSec: sum('acquires') / elapsedS,
    grantsPerSec: sum('granted') / elapsedS,
    occupancy: heldMs / (elapsedS * 1000 * TENANTS.length * LIMIT),
    maxHeld: Math.max(...sweeps.map((s) => s.most)),
    overLimit: sweeps.reduce((total, s) => total + s.over, 0),
    clientCpuUs: sum('cpuUs') / sum('acquires'),
    serverCpuUs: serverCpu / sum('acquires'),
    degraded: sum('degraded'),
    releaseErrors: sum('releaseErrors'),
    histogram,
    ...freed,
  };
}

/**
 * SIGKILLs `victim`, whose held slot ids are `held` (it announced each), and polls the tenants' sets every 5 ms
 * until none of those is left, at most ttl + 3 s. Also returns when the last of them expires as stored, and how
 * many were certainly gone before their expiry (read after the kill + 200 ms, when any release the victim had sent
 * has landed): none may be.
 */
async function killAndWatch(victim, held, admin, keys) {
  const exited = new Promise((resolve) => victim.once('exit', resolve));
  victim.kill('SIGKILL');
  await exited;
  const killedAt = Date.now();
  /** Member to its stored expiry (ms on Redis TIME, this machine's clock). */
  const read = async () => {
    const scores = new Map();
    for (const flat of await Promise.all(keys.map((key) => admin.zrange(key, 0, -1, 'WITHSCORES')))) {
      for (let i = 0; i < flat.length; i += 2) scores.set(flat[i], Number(flat[i + 1]));
    }
    return scores;
  };
  const stored = await read();
  const expiry = new Map([...held].filter((id) => stored.has(id)).map((id) => [id, stored.get(id)]));
  let remaining = [...expiry.keys()];
  let early = 0;
  let freedAt = Date.now();
  while (remaining.length > 0 && Date.now() - killedAt < TTL_MS + 3000) {
    await new Promise((resolve) => setTimeout(resolve, 5));
    const readFrom = Date.now();
    const now = await read();
    freedAt = Date.now();
    for (const id of remaining) if (!now.has(id) && readFrom > killedAt + 200 && freedAt < expiry.get(id)) early++;
    remaining = remaining.filter((id) => now.has(id));
  }
  return {
    killedAt,
    victimSlots: expiry.size,
    expiresInMs: Math.max(0, ...[...expiry.values()].map((e) => e - killedAt)),
    freedEarly: early,
    freedMs: remaining.length > 0 ? Number.POSITIVE_INFINITY : freedAt - killedAt,
  };
}

/** The most holders of one tenant certainly at once, and how many grants took it over the limit. */
function sweep(pairs) {
  const events = [];
  for (let i = 0; i < pairs.length; i += 2) {
    const from = pairs[i] + 1; // the answer arrived at most 1 ms after the ms Date.now() reported
    const to = pairs[i + 1];
    if (to > from) events.push([from, 1], [to, -1]);
  }
  events.sort((a, b) => a[0] - b[0] || a[1] - b[1]); // at one instant, ends first: touching is not overlapping
  let held = 0;
  let most = 0;
  let over = 0;
  for (const [, step] of events) {
    held += step;
    if (held > most) most = held;
    if (step > 0 && held > LIMIT) over++;
  }
  return { most, over };
}

function sumHeld(pairs) {
  let total = 0;
  for (let i = 0; i < pairs.length; i += 2) total += pairs[i + 1] - pairs[i];
  return total;
}

async function keysLeft(admin, contestant, name) {
  const found = await Promise.all(TENANTS.map((t) => admin.exists(contestant.keyOf(name, t))));
  return found.reduce((a, b) => a + b, 0);
}

/** After a kill round: once the killed holder's leases are past their ttl (plus 100 ms), no key may be left. */
async function keysLeftAfterExpiry(admin, contestant, name, killedAt) {
  const wait = killedAt + TTL_MS + 100 - Date.now();
  if (wait > 0) await new Promise((resolve) => setTimeout(resolve, wait));
  return keysLeft(admin, contestant, name);
}

function percentile(histogram, q) {
  const buckets = [...histogram.entries()].sort((a, b) => a[0] - b[0]);
  const total = buckets.reduce((n, [, count]) => n + count, 0);
  let seen = 0;
  for (const [bucket, count] of buckets) {
    seen += count;
    if (seen >= q * total) return (bucket + 1) * BUCKET_MS;
  }
  return Number.NaN;
}

/** The row of a contestant without a SIGKILL round. */
const NO_KILL = {
  maxHeld: 0,
  overLimit: 0,
  degraded: 0,
  freedMs: undefined,
  expiresInMs: undefined,
  freedEarly: 0,
  victimSlots: undefined,
  keysLeft: 0,
};

function report(results, { rounds, roundMs, killRoundMs, dbsize, version }) {
  const rows = CONTESTANTS.map((contestant) => {
    const { rounds: measured, histogram, kill = NO_KILL } = results[contestant.key];
    const rates = measured.map((r) => r.acquiresPerSec);
    const rate = median(rates);
    return {
      name: contestant.name,
      nsPerOp: 1e9 / rate,
      opsPerSec: rate,
      spreadPct: spreadPct(rates),
      grantsPerSec: median(measured.map((r) => r.grantsPerSec)),
      clientCpuUs: median(measured.map((r) => r.clientCpuUs)),
      serverCpuUs: median(measured.map((r) => r.serverCpuUs)),
      occupancy: median(measured.map((r) => r.occupancy)),
      p50: percentile(histogram, 0.5),
      p99: percentile(histogram, 0.99),
      maxHeld: Math.max(...measured.map((r) => r.maxHeld), kill.maxHeld),
      overLimit: measured.reduce((n, r) => n + r.overLimit, kill.overLimit),
      degraded: measured.reduce((n, r) => n + r.degraded, kill.degraded),
      freedMs: kill.freedMs,
      expiresInMs: kill.expiresInMs,
      freedEarly: kill.freedEarly,
      victimSlots: kill.victimSlots,
      keysLeft: measured.reduce((n, r) => n + r.keysLeft, kill.keysLeft),
    };
  });
  const ratios = [{ key: 'vsReference', label: '÷ reference', base: CONTESTANTS[1].name }];
  addRatios(rows, ratios);
  const [sluice, reference, pipelined] = rows;
  const ms = (v) => (Number.isFinite(v) ? `${v.toFixed(2)} ms` : 'never');
  return {
    title:
      `Fleet concurrency: ${PROCESSES} processes × ${LOOPS} loops on one redis-server ${version}, ${TENANTS.length} tenants, limit ${LIMIT} each, ` +
      `hold ${HOLD_MS} ms, ttl ${TTL_MS} ms; ${rounds} round(s) of ${roundMs / 1000} s per contestant, alternating (ops/s = acquires answered per second, all processes)`,
    rows,
    ratios,
    columns: [
      { key: 'grantsPerSec', label: 'grants/s', format: (v) => formatInteger(v) },
      { key: 'occupancy', label: 'occupancy', format: (v) => v.toFixed(2) },
      { key: 'p50', label: 'p50', format: ms },
      { key: 'p99', label: 'p99', format: ms },
      { key: 'clientCpuUs', label: 'client CPU/acq', format: (v) => `${v.toFixed(1)} µs` },
      { key: 'serverCpuUs', label: 'redis CPU/acq', format: (v) => `${v.toFixed(1)} µs` },
      { key: 'maxHeld', label: 'most held' },
      { key: 'overLimit', label: 'over limit' },
      { key: 'degraded', label: 'degraded' },
      { key: 'freedMs', label: 'SIGKILL freed', format: (v) => (v === undefined ? '–' : Number.isFinite(v) ? `${v} ms` : 'never') },
      { key: 'keysLeft', label: 'keys left' },
    ],
    sections: [
      {
        heading: `SIGKILL of one of the ${PROCESSES} workers halfway through a ${killRoundMs / 1000} s round (ttl ${TTL_MS} ms)`,
        lines: rows
          .filter((r) => r.freedMs !== undefined)
          .map(
            (r) =>
              `${r.name}: held ${r.victimSlots} slots at the kill, whose leases expired by ${r.expiresInMs} ms after it (as stored); ` +
              `all free ${Number.isFinite(r.freedMs) ? `${r.freedMs} ms` : 'never (within ttl + 3 s)'} after it (polled); ${r.freedEarly} freed before its expiry`,
          ),
      },
    ],
    targets: [
      target(
        "sluice acquires/s at least the reference semaphore's (sluice ÷ reference)",
        sluice.opsPerSec / reference.opsPerSec,
        '>=',
        1,
        formatRatio,
      ),
      target(
        "sluice acquires/s at least the auto-pipelined reference's (sluice ÷ that)",
        sluice.opsPerSec / pipelined.opsPerSec,
        '>=',
        1,
        formatRatio,
      ),
      target('sluice never more than the limit held per tenant (wall-clock sweep, every round)', sluice.overLimit, '<=', 0, String),
      target(
        'reference never more than the limit held per tenant (the sweep agrees with a known-exact executor)',
        reference.overLimit + pipelined.overLimit,
        '<=',
        0,
        String,
      ),
      target(
        `sluice: a SIGKILLed holder's slots free within ttl + ${KILL_MARGIN_MS} ms (ms after the kill)`,
        sluice.freedMs,
        '<=',
        TTL_MS + KILL_MARGIN_MS,
        String,
      ),
      target('sluice: no slot of the SIGKILLed holder freed before its lease expired', sluice.freedEarly, '<=', 0, String),
      target('sluice: no lease key left after the rounds', sluice.keysLeft, '<=', 0, String),
      target('no key at all left in the server at the end', dbsize, '<=', 0, String),
    ],
    notes: [
      'occupancy: the held intervals ([acquire answered, release sent], caller wall clock) summed ÷ (time × tenants × limit). "most held" and "over limit" come from the sweep of intervals certainly overlapping (a 1 ms rounding allowance at the start of each).',
      "client CPU/acq: the worker processes' CPU time (process.cpuUsage) ÷ acquires, releases included; redis CPU/acq: redis-server's used_cpu_user + used_cpu_sys over the round ÷ acquires. Both hold up better than ops/s when other work shares the machine.",
      'A refusal retries at once, so acquires/s counts refusals too; grants/s is the part that took a slot. p50/p99: every acquire of every process, performance.now() around the call.',
      `sluice runs with onStoreError 'deny' (a store failure is counted as degraded, never as a slot) and its default deadline; the reference is ioredis defineCommand (EVALSHA) and ZREM on the same connection, and once more on an auto-pipelined one (no SIGKILL round for that one).`,
    ],
  };
}
