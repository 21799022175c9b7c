/**
 * Runs one contestant of a rate-limit fleet simulation (rate-worker.mjs) and judges it: `processes` OS processes
 * (more than this machine's cores, so the CPU is saturated as on a busy server), each with `inFlight` loops calling
 * as fast as they can, started together on a window boundary for `durationMs`. Admissions are judged by the callers'
 * wall clock (judge.mjs); Redis commands per decision come from the server's INFO commandstats before and after.
 */
import { fork } from 'node:child_process';
import { createConnection } from 'node:net';
import { judgeFixedWindow } from './judge.mjs';

/** The workload of the published simulation; a caller overrides what it must. */
export const FLEET_DEFAULTS = {
  processes: 4,
  inFlight: 64,
  durationMs: 6000,
  limit: 100,
  windowMs: 1000,
  identities: 10_000,
  exponent: 1,
  abuserShare: 0.3,
};

/** One command on a fresh connection, its raw RESP reply as text. */
export function redisCommand(port, command, timeoutMs = 2000) {
  return new Promise((resolve, reject) => {
    const socket = createConnection({ host: '127.0.0.1', port }, () => socket.write(`${command}\r\n`));
    let reply = '';
    const timer = setTimeout(() => socket.destroy(new Error(`${command}: no reply within ${timeoutMs} ms`)), timeoutMs);
    socket.on('data', (chunk) => {
      reply += chunk.toString('utf8');
      const header = /^\$(\d+)\r\n/.exec(reply);
      if (header === null ? reply.endsWith('\r\n') : Buffer.byteLength(reply) >= header[0].length + Number(header[1]) + 2) socket.end();
    });
    socket.once('close', () => {
      clearTimeout(timer);
      resolve(reply);
    });
    socket.once('error', reject);
  });
}

/** Commands the server has executed so far (INFO commandstats, every command, those inside scripts included; INFO itself left out). */
export async function commandsExecuted(port) {
  const info = await redisCommand(port, 'INFO commandstats');
  let total = 0;
  for (const [, command, calls] of info.matchAll(/cmdstat_([a-z|_-]+):calls=(\d+)/g)) if (command !== 'info') total += Number(calls);
  return total;
}

/**
 * @param {object} options
 * @param {number} options.port            the redis-server's port
 * @param {string} options.contestant      'plain' | 'lua-incr' | 'reference-lease' | 'deny-cache' | 'lease' | 'async'
 * @param {object} [options.tier]          further tieredStore options (e.g. { async: { maxUnsynced: 20 } })
 * @param {(startAt: number, stopAt: number) => Promise<void>} [options.during]  runs beside the fleet (a kill and a restart)
 * @param {number} [options.seed]
 */
export async function runRateFleet(options) {
  const o = { ...FLEET_DEFAULTS, seed: 0x5eed, ...options };
  const name = `${o.contestant}-${Date.now().toString(36)}`;
  const worker = new URL('./rate-worker.mjs', import.meta.url);
  const children = Array.from({ length: o.processes }, (_, index) => {
    const config = { ...o, during: undefined, name, seed: o.seed + index, instances: o.processes };
    return fork(worker, [JSON.stringify(config)], {
      stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
      serialization: 'advanced',
      execArgv: process.env.FLEET_PROFILE ? ['--cpu-prof', `--cpu-prof-dir=${process.env.FLEET_PROFILE}`] : [],
    });
  });
  const reports = children.map(
    (child) =>
      new Promise((resolve, reject) => {
        let report;
        child.on('message', (m) => {
          if (m.type === 'report') report = m;
          if (m.type === 'crash') reject(new Error(`fleet worker ${child.pid} crashed: ${m.error}`));
        });
        child.once('exit', (code, signal) =>
          report !== undefined
            ? resolve(report)
            : reject(new Error(`fleet worker ${child.pid} exited with ${code ?? signal} before reporting`)),
        );
      }),
  );
  reports.forEach((p) => p.catch(() => undefined));
  try {
    await Promise.all(
      children.map(
        (child) =>
          new Promise((resolve, reject) => {
            child.on('message', (m) => m.type === 'ready' && resolve());
            child.once('exit', (code) => reject(new Error(`fleet worker ${child.pid} exited (${code}) before it was ready`)));
          }),
      ),
    );
    const commandsBefore = await commandsExecuted(o.port);
    const startAt = Math.ceil((Date.now() + 200) / o.windowMs) * o.windowMs;
    const stopAt = startAt + o.durationMs;
    for (const child of children) child.send({ type: 'go', startAt, stopAt });
    const during = o.during?.(startAt, stopAt);
    let timer;
    const done = await Promise.race([
      Promise.all(reports),
      new Promise((_, reject) => {
        timer = setTimeout(
          () => reject(new Error('a fleet worker did not report within 15 s of the end of the run')),
          stopAt + 15_000 - Date.now(),
        );
      }),
    ]).finally(() => clearTimeout(timer));
    await during;
    const commands = (await commandsExecuted(o.port)) - commandsBefore;
    return summarize(o, done, commands);
  } finally {
    for (const child of children) if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
  }
}

function summarize(o, reports, commands) {
  let length = 0;
  for (const r of reports) length += r.admitted.identity.length;
  const identity = new Int32Array(length);
  const start = new Float64Array(length);
  const end = new Float64Array(length);
  let at = 0;
  for (const r of reports) {
    identity.set(r.admitted.identity, at);
    start.set(r.admitted.start, at);
    end.set(r.admitted.end, at);
    at += r.admitted.identity.length;
  }
  const verdict = judgeFixedWindow({ identity, start, end, length }, { limit: o.limit, windowMs: o.windowMs });
  const sum = (key) => reports.reduce((total, r) => total + r[key], 0);
  const decisions = sum('decisions');
  const add = (key) => {
    const total = {};
    for (const r of reports) for (const [k, v] of Object.entries(r[key] ?? {})) total[k] = (total[k] ?? 0) + v;
    return total;
  };
  const stats = add('stats');
  return {
    contestant: o.contestant,
    verdict,
    decisions,
    decisionsPerSec: decisions / (o.durationMs / 1000),
    // A server restarted mid-run starts its counts over: no figure then.
    commandsPerDecision: decisions > 0 && commands >= 0 && o.during === undefined ? commands / decisions : Number.NaN,
    degraded: sum('degraded'),
    degradedAdmitted: sum('degradedAdmitted'),
    degradedCodes: add('degradedCodes'),
    degradedAdmittedReasons: add('degradedAdmittedReasons'),
    lastDegradedAt: Math.max(...reports.map((r) => r.lastDegradedAt)),
    rejected: sum('rejected'),
    unhandled: reports.flatMap((r) => r.unhandled),
    loopDelayMaxMs: Math.max(...reports.map((r) => r.loopDelayMs.max)),
    loopDelayP99Ms: Math.max(...reports.map((r) => r.loopDelayMs.p99)),
    stats,
    admissions: { identity, start, end, length },
  };
}
