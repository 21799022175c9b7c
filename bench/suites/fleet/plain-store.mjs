#!/usr/bin/env node
// The plain Redis store in a busy fleet, against a 20-line Lua INCR limiter: a standalone profiling driver.
//
//   node bench/suites/fleet/plain-store.mjs [--rounds=3] [--seconds=6] [--workers=4] [--inflight=64]
//        [--only=sluice,incr-auto,incr] [--pause=immediate|none] [--prof=<dir>]
//
// It starts its own redis-server on a free loopback port, then for each round and each contestant (alternating,
// one after another) forks `workers` OS processes (more than this machine's cores, so the CPU is saturated and
// the client-side CPU per decision decides the throughput). Each process runs `inflight` loops that call the
// contestant as fast as they can for `seconds`; identities: 30% of calls from one abuser, the rest from 10,000
// users drawn Zipf(s = 1). After each answer a loop yields to the event loop (`setImmediate`) before its next call,
// as a server's request handlers do (each request arrives in its own I/O callback, with the microtask queue run
// between them); `--pause=none` calls again at once, from the same microtask chain. Every contestant is a fixed window of 100 per second, on an ioredis client with
// `enableOfflineQueue: false`:
// - sluice: createLimiter({ store: redisStore(client), rules: fixedWindow({ limit: 100, window: '1s' }) });
// - incr-auto / incr: a Lua script doing one INCR (+ PEXPIRE on the first) per decision on the key of the
//   identity's current window (the fleet simulation's `luaIncr`, test/harness/fleet/contestants.mjs), through
//   ioredis's defineCommand (EVALSHA), with and without enableAutoPipelining.
// Printed per contestant (median of rounds, with the spread): decisions/s of the fleet, the ratio to the faster
// Lua INCR, Redis commands per decision (INFO commandstats deltas, commands run inside scripts included; script
// calls apart), client CPU per decision (process.cpuUsage of the workers), Redis CPU per decision, the worst
// event-loop delay, degraded answers, and admissions over the limit, judged by the caller's wall clock: an
// admission counts in a window only when Date.now() just before the call and just after its answer both fall
// in it, and a window in which more than 100 such admissions of one identity happened is over the limit.
// `--prof=<dir>` runs the workers under `node --cpu-prof` and writes their profiles to <dir>.
import { fork } from 'node:child_process';
import { cpus } from 'node:os';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import { Redis } from 'ioredis';
import { luaIncr } from '../../../test/harness/fleet/contestants.mjs';
import { startRedisServer } from '../outbound/redis-server.mjs';
import { median, prng, spreadPct } from '../../lib/stats.mjs';
import { formatInteger, formatRatio } from '../../lib/table.mjs';

const LIMIT = 100;
const WINDOW_MS = 1_000;
const USERS = 10_000;
const ZIPF_EXPONENT = 1;
const ABUSER_SHARE = 0.3;
const WARMUP_MS = 1_000;

const CONTESTANTS = {
  sluice: 'sluice plain redisStore',
  'incr-auto': 'Lua INCR, auto-pipelined',
  incr: 'Lua INCR, not pipelined',
};

if (process.argv[2] === 'worker') await worker(JSON.parse(process.argv[3]));
else await main();

async function main() {
  const options = Object.fromEntries(
    process.argv
      .slice(2)
      .filter((a) => a.startsWith('--'))
      .map((a) => {
        const [key, value] = a.slice(2).split('=', 2);
        return [key, value ?? true];
      }),
  );
  const rounds = Number(options.rounds ?? 3);
  const seconds = Number(options.seconds ?? 6);
  const workers = Number(options.workers ?? 4);
  const inFlight = Number(options.inflight ?? 64);
  const only = typeof options.only === 'string' ? options.only.split(',') : Object.keys(CONTESTANTS);
  for (const name of only)
    if (!(name in CONTESTANTS)) throw new Error(`--only: unknown contestant ${name}; known: ${Object.keys(CONTESTANTS).join(', ')}`);
  const prof = typeof options.prof === 'string' ? options.prof : undefined;
  const pause = options.pause ?? 'immediate';
  if (pause !== 'immediate' && pause !== 'none') throw new Error(`--pause must be immediate or none, got ${pause}`);

  const server = await startRedisServer();
  const admin = new Redis({ host: '127.0.0.1', port: server.port, enableOfflineQueue: true });
  log(
    `redis-server ${server.version} on port ${server.port}; ${cpus().length} cores; ${workers} processes x ${inFlight} loops, ${seconds} s per run, ${rounds} rounds, pause ${pause}`,
  );
  const results = new Map(only.map((name) => [name, []]));
  try {
    for (let round = 1; round <= rounds; round++) {
      // Alternate the order from round to round, so neither contestant always runs on a warmer (or hotter) machine.
      const order = round % 2 === 1 ? only : [...only].reverse();
      for (const name of order) {
        await admin.flushall();
        const result = await runFleet({ name, port: server.port, admin, workers, inFlight, seconds, seed: round, prof, pause });
        results.get(name).push(result);
        log(
          `round ${round} ${CONTESTANTS[name]}: ${formatInteger(result.perSecond)} decisions/s, ${result.commandsPerDecision.toFixed(2)} commands/decision ` +
            `(${result.scriptCallsPerDecision.toFixed(3)} script calls), client CPU ${result.clientCpuUs.toFixed(1)} µs/decision, Redis CPU ${result.redisCpuUs.toFixed(1)} µs/decision, ` +
            `loop delay max ${result.maxLoopDelayMs.toFixed(0)} ms, over limit ${result.over}, degraded ${result.degraded}${result.degraded > 0 ? ` ${JSON.stringify(result.degradedBy)}` : ''}`,
        );
      }
    }
  } finally {
    admin.disconnect();
    await server.stop();
  }
  report(results, { rounds, seconds, workers, inFlight, pause });
}

function report(results, setup) {
  const rows = [...results].map(([name, runs]) => {
    const pick = (key) => median(runs.map((r) => r[key]));
    return {
      name,
      label: CONTESTANTS[name],
      perSecond: pick('perSecond'),
      spread: spreadPct(runs.map((r) => r.perSecond)),
      all: runs.map((r) => r.perSecond),
      commands: pick('commandsPerDecision'),
      scripts: pick('scriptCallsPerDecision'),
      clientCpuUs: pick('clientCpuUs'),
      redisCpuUs: pick('redisCpuUs'),
      loopDelay: Math.max(...runs.map((r) => r.maxLoopDelayMs)),
      over: runs.reduce((sum, r) => sum + r.over, 0),
      degraded: runs.reduce((sum, r) => sum + r.degraded, 0),
    };
  });
  const incr = rows.filter((r) => r.name.startsWith('incr')).sort((a, b) => b.perSecond - a.perSecond)[0];
  // Per round, against that round's run of the same INCR contestant (minutes apart at most): robust to a machine
  // whose load drifts between rounds. And the CPU both sides spent per decision, which bounds a saturated fleet.
  for (const row of rows) {
    const base = incr === undefined ? undefined : results.get(incr.name);
    row.roundRatios = base === undefined ? [] : results.get(row.name).map((r, i) => r.perSecond / base[i].perSecond);
    row.cpuUs = row.clientCpuUs + row.redisCpuUs;
  }
  const header = [
    'contestant',
    'decisions/s',
    'rounds',
    'spread',
    `÷ ${incr?.name ?? 'incr'}`,
    'per round',
    'cmds/dec',
    'scripts/dec',
    'client µs/dec',
    'redis µs/dec',
    'CPU ÷',
    'max loop delay',
    'over limit',
    'degraded',
  ];
  const body = rows.map((r) => [
    r.label,
    formatInteger(r.perSecond),
    r.all.map((v) => formatInteger(v)).join(' / '),
    `±${(r.spread / 2).toFixed(0)}%`,
    incr === undefined ? '–' : formatRatio(r.perSecond / incr.perSecond),
    r.roundRatios.map((v) => formatRatio(v)).join(' / '),
    r.commands.toFixed(2),
    r.scripts.toFixed(3),
    r.clientCpuUs.toFixed(1),
    r.redisCpuUs.toFixed(1),
    incr === undefined ? '–' : formatRatio(incr.clientCpuUs + incr.redisCpuUs === 0 ? NaN : (incr.clientCpuUs + incr.redisCpuUs) / r.cpuUs),
    `${r.loopDelay.toFixed(0)} ms`,
    String(r.over),
    String(r.degraded),
  ]);
  const widths = header.map((h, i) => Math.max(h.length, ...body.map((cells) => cells[i].length)));
  const line = (cells) => cells.map((cell, i) => (i === 0 ? cell.padEnd(widths[i]) : cell.padStart(widths[i]))).join('  ');
  console.log(
    `\nFleet: ${setup.workers} processes x ${setup.inFlight} loops on ${cpus().length} cores, ${setup.seconds} s per run, median of ${setup.rounds} rounds, pause ${setup.pause}; ` +
      `fixed window ${LIMIT}/s; 30% abuser, 70% Zipf(s=${ZIPF_EXPONENT}) over ${formatInteger(USERS)} users\n`,
  );
  console.log([line(header), widths.map((w) => '-'.repeat(w)).join('  '), ...body.map(line)].join('\n'));
  console.log(
    '\n"÷" is decisions/s divided by the faster Lua INCR\'s (above 1.00x: more decisions per second), medians; "per round" the same ratio in each round.' +
      ' "CPU ÷" is that INCR\'s client + Redis CPU per decision divided by this row\'s (above 1.00x: less CPU per decision). cmds/dec counts every command Redis ran, those inside scripts included (INFO commandstats);' +
      ' scripts/dec only the script calls. client µs/dec is the workers\' CPU (user + system) per decision, redis µs/dec the server\'s. "over limit": admissions beyond 100 in a window,' +
      " counting only calls whose start and answer (the caller's Date.now()) fall in that window.",
  );
}

/** One run of one contestant: `workers` processes, started together after their warm-up. */
async function runFleet({ name, port, admin, workers, inFlight, seconds, seed, prof, pause }) {
  const children = [];
  for (let w = 0; w < workers; w++) {
    const config = { name, port, inFlight, seconds, seed: seed * 1000 + w, pause };
    const execArgv =
      prof === undefined ? [] : ['--cpu-prof', `--cpu-prof-dir=${prof}`, `--cpu-prof-name=${name}-round${seed}-worker${w}.cpuprofile`];
    const child = fork(fileURLToPath(import.meta.url), ['worker', JSON.stringify(config)], {
      execArgv,
      stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
    });
    const entry = { child, ready: message(child, 'ready'), done: message(child, 'done') };
    entry.ready.catch(() => undefined); // awaited below; a worker that dies early rejects both
    entry.done.catch(() => undefined);
    children.push(entry);
  }
  // Bounded: a worker that has not reported a minute after its run should have ended is killed, and the run fails.
  const guard = setTimeout(
    () => {
      for (const { child } of children) if (child.exitCode === null) child.kill('SIGKILL');
    },
    (seconds + 60) * 1000 + WARMUP_MS,
  );
  let reports;
  let before;
  try {
    await Promise.all(children.map((c) => c.ready));
    before = await serverStats(admin);
    for (const { child } of children) child.send({ type: 'go' });
    reports = await Promise.all(children.map((c) => c.done));
  } finally {
    clearTimeout(guard);
  }
  const after = await serverStats(admin);
  await Promise.all(
    children.map(({ child }) => (child.exitCode === null ? new Promise((resolve) => child.once('exit', resolve)) : undefined)),
  );

  const decisions = reports.reduce((sum, r) => sum + r.decisions, 0);
  const elapsedMs = Math.max(...reports.map((r) => r.stoppedAt)) - Math.min(...reports.map((r) => r.startedAt));
  // Wall-clock admissions per (identity, window), summed over the processes.
  const admitted = new Map();
  for (const r of reports) for (const [key, count] of r.admitted) admitted.set(key, (admitted.get(key) ?? 0) + count);
  let over = 0;
  for (const count of admitted.values()) if (count > LIMIT) over += count - LIMIT;
  let commands = 0;
  let scripts = 0;
  for (const [command, calls] of after.calls) {
    if (command === 'info') continue;
    const delta = calls - (before.calls.get(command) ?? 0);
    commands += delta;
    if (/^(fcall|evalsha|eval)(_ro)?$/.test(command)) scripts += delta;
  }
  return {
    perSecond: (decisions / elapsedMs) * 1000,
    commandsPerDecision: commands / decisions,
    scriptCallsPerDecision: scripts / decisions,
    clientCpuUs: reports.reduce((sum, r) => sum + r.cpuUs, 0) / decisions,
    redisCpuUs: ((after.cpuSeconds - before.cpuSeconds) * 1e6) / decisions,
    maxLoopDelayMs: Math.max(...reports.map((r) => r.maxLoopDelayMs)),
    over,
    degraded: reports.reduce((sum, r) => sum + r.degraded, 0),
    degradedBy: reports.reduce((all, r) => {
      for (const [code, n] of Object.entries(r.degradedBy)) all[code] = (all[code] ?? 0) + n;
      return all;
    }, {}),
  };
}

function message(child, type) {
  return new Promise((resolve, reject) => {
    const onMessage = (m) => {
      if (m.type === type) {
        child.off('message', onMessage);
        resolve(m);
      } else if (m.type === 'error') reject(new Error(m.error));
    };
    child.on('message', onMessage);
    // The exit can be seen before a large last message is read: give the channel a moment first.
    child.once('exit', (code) => setTimeout(() => reject(new Error(`worker exited with ${code} before '${type}'`)), 1000));
  });
}

async function serverStats(admin) {
  const text = await admin.info('all');
  const calls = new Map();
  for (const match of text.matchAll(/^cmdstat_([^:]+):calls=(\d+)/gm)) calls.set(match[1], Number(match[2]));
  const user = Number(/^used_cpu_user:([\d.]+)/m.exec(text)[1]);
  const sys = Number(/^used_cpu_sys:([\d.]+)/m.exec(text)[1]);
  return { calls, cpuSeconds: user + sys };
}

function log(line) {
  process.stderr.write(`${line}\n`);
}

// ---- worker ----

async function worker({ name, port, inFlight, seconds, seed, pause }) {
  process.on('unhandledRejection', (reason) => {
    process.send({ type: 'error', error: `unhandled rejection: ${reason?.stack ?? reason}` });
    process.exit(1);
  });
  const client = new Redis({
    host: '127.0.0.1',
    port,
    enableOfflineQueue: false,
    enableAutoPipelining: name === 'incr-auto',
    lazyConnect: true,
  });
  await client.connect();
  const decide = await contestant(name, client);

  const random = prng(seed);
  const pickUser = zipf(USERS, ZIPF_EXPONENT, random);
  const identities = Array.from({ length: USERS + 1 }, (_, i) => (i === USERS ? 'abuser' : `user-${i}`));
  const pick = () => (random() < ABUSER_SHARE ? USERS : pickUser());

  let running = true;
  let decisions = 0;
  let degraded = 0;
  /** Degraded answers by error code (sluice: STORE_TIMEOUT, STORE_ERROR, CIRCUIT_OPEN). */
  let degradedBy = {};
  /**
   * Admissions whose start and answer both fell in one window, per (window, identity): windows counted from the
   * one the run began in (a few seconds of them), so the bookkeeping stays a typed-array increment.
   */
  const slots = Math.ceil((seconds * 1000 + WARMUP_MS) / WINDOW_MS) + 30; // a generous margin for a stalled loop
  let firstWindow = Math.floor(Date.now() / WINDOW_MS);
  const admitted = new Int32Array(slots * (USERS + 1));
  const loop = async () => {
    while (running) {
      const i = pick();
      const startedAt = Date.now();
      const answer = await decide(identities[i]);
      const answeredAt = Date.now();
      if (!running) break;
      decisions++;
      if (answer.degraded) {
        degraded++;
        const code = String(answer.error?.code ?? answer.error ?? 'refused');
        degradedBy[code] = (degradedBy[code] ?? 0) + 1;
      }
      if (answer.allowed) {
        const window = Math.floor(startedAt / WINDOW_MS);
        if (window === Math.floor(answeredAt / WINDOW_MS)) admitted[(window - firstWindow) * (USERS + 1) + i]++;
      }
      // Without a pause, a failure policy's answer (an open circuit answers at once) could let the loops spin on
      // microtasks and starve the timer that ends the run: such a loop yields all the same.
      if (pause === 'immediate' || answer.degraded) await new Promise((resolve) => setImmediate(resolve));
    }
  };

  // Warm-up (JIT, script cache), then wait for the parent's go so every process starts together.
  running = true;
  setTimeout(() => (running = false), WARMUP_MS);
  await Promise.all(Array.from({ length: inFlight }, loop));
  process.send({ type: 'ready' });
  await new Promise((resolve) => process.once('message', resolve));

  running = true;
  decisions = 0;
  degraded = 0;
  degradedBy = {};
  admitted.fill(0);
  firstWindow = Math.floor(Date.now() / WINDOW_MS);
  const delay = monitorEventLoopDelay({ resolution: 10 });
  delay.enable();
  const cpuBefore = process.cpuUsage();
  const startedAt = Date.now();
  let stoppedAt = 0;
  setTimeout(() => {
    running = false;
    stoppedAt = Date.now();
  }, seconds * 1000);
  await Promise.all(Array.from({ length: inFlight }, loop));
  const cpu = process.cpuUsage(cpuBefore);
  delay.disable();
  client.disconnect();
  process.send(
    {
      type: 'done',
      decisions,
      degraded,
      degradedBy,
      startedAt,
      stoppedAt,
      cpuUs: cpu.user + cpu.system,
      maxLoopDelayMs: delay.max / 1e6,
      admitted: admittedPairs(admitted, firstWindow),
    },
    () => process.disconnect(),
  );
}

/** The (window, identity) slots that admitted anything, as [absolute window * (USERS + 1) + identity, count]. */
function admittedPairs(admitted, firstWindow) {
  const pairs = [];
  for (let slot = 0; slot < admitted.length; slot++) {
    if (admitted[slot] !== 0)
      pairs.push([(Math.floor(slot / (USERS + 1)) + firstWindow) * (USERS + 1) + (slot % (USERS + 1)), admitted[slot]]);
  }
  return pairs;
}

/** The contestant's one call: `(identity) => Promise<{ allowed, degraded }>`. */
async function contestant(name, client) {
  if (name === 'sluice') {
    const { createLimiter, fixedWindow } = await import('@sluice/core');
    const { redisStore } = await import('@sluice/redis');
    const limiter = createLimiter({ store: redisStore(client), rules: fixedWindow({ limit: LIMIT, window: '1s' }) });
    return (identity) => limiter.limit(identity);
  }
  // The fleet simulation's own peer (test/harness/fleet): INCR of the identity's window counter, PEXPIRE on the first.
  return luaIncr(client, { limit: LIMIT, windowMs: WINDOW_MS, prefix: 'incr' });
}

/** Zipf over ranks 0..n-1 with exponent s: rank k is drawn with weight (k + 1)^-s. */
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
