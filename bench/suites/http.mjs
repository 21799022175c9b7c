// HTTP suite: requests per second through bare Express and Fastify, each with sluice (memory store) and with
// the peer a user would pick instead (express-rate-limit, @fastify/rate-limit), measured with autocannon on
// 127.0.0.1. Each server runs in its own process; autocannon runs here. Limits are far above what a run sends,
// so every request is allowed and the table measures the cost of the limiter, not of refusals.
import autocannon from 'autocannon';
import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { target } from '../lib/report.mjs';
import { addRatios, formatInteger } from '../lib/table.mjs';

export const description = 'autocannon on localhost: bare Express/Fastify vs + sluice (memory) vs + express-rate-limit / @fastify/rate-limit';

const SERVER = join(dirname(fileURLToPath(import.meta.url)), 'http', 'server.mjs');
const MAIN = ['express', 'express+sluice', 'express+express-rate-limit', 'fastify', 'fastify+sluice', 'fastify+@fastify/rate-limit'];
const HEADERS_OFF = ['express+sluice (no headers)', 'fastify+sluice (no headers)'];
/** What each variant must send, checked on one request before timing: a limiter that sends nothing is not running. */
const SIGNATURE = {
  express: (h) => h.ratelimit === undefined,
  'express+sluice': (h) => /^"bench";r=\d+;t=\d+$/.test(h.ratelimit ?? ''),
  'express+express-rate-limit': (h) => h.ratelimit !== undefined,
  fastify: (h) => h.ratelimit === undefined && h['x-ratelimit-limit'] === undefined,
  'fastify+sluice': (h) => /^"bench";r=\d+;t=\d+$/.test(h.ratelimit ?? ''),
  'fastify+@fastify/rate-limit': (h) => h['x-ratelimit-limit'] !== undefined,
  'express+sluice (no headers)': (h) => h.ratelimit === undefined,
  'fastify+sluice (no headers)': (h) => h.ratelimit === undefined,
};

function startServer(variant) {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [SERVER, variant], { stdio: ['ignore', 'pipe', 'inherit'] });
    let out = '';
    child.stdout.setEncoding('utf8');
    child.stdout.on('data', (chunk) => {
      out += chunk;
      const line = out.split('\n')[0];
      if (out.includes('\n')) resolve({ child, port: JSON.parse(line).port });
    });
    child.on('error', reject);
    child.on('exit', (code) => reject(new Error(`${variant} server exited with ${code} before listening`)));
  });
}

function stopServer(child) {
  return new Promise((resolve) => {
    if (child.exitCode !== null) return resolve();
    child.once('exit', () => resolve());
    child.kill('SIGTERM');
  });
}

/**
 * Nanoseconds the server's main thread has spent on a CPU (/proc/<pid>/task/<pid>/schedstat, Linux). All of a
 * Node HTTP server's JavaScript runs there, so its growth over a run divided by the requests served is the CPU
 * cost of one request: on a machine shared with other busy processes that is far steadier than requests per
 * second, which also measure how long the server waited in the run queue.
 */
function serverCpuNs(pid) {
  try {
    return Number(readFileSync(`/proc/${pid}/task/${pid}/schedstat`, 'utf8').split(' ', 1)[0]);
  } catch {
    return undefined;
  }
}

function cannon(url, { connections, durationS }) {
  return new Promise((resolve, reject) => {
    autocannon({ url, connections, duration: durationS, pipelining: 1 }, (error, result) => (error ? reject(error) : resolve(result)));
  });
}

async function measure(variant, settings, log) {
  const { child, port } = await startServer(variant);
  const url = `http://127.0.0.1:${port}/`;
  try {
    const probe = await fetch(url);
    const headers = Object.fromEntries(probe.headers);
    if (probe.status !== 200 || !SIGNATURE[variant](headers)) {
      throw new Error(`${variant}: the probe request did not look right (status ${probe.status}, headers ${JSON.stringify(headers)})`);
    }
    await cannon(url, { connections: settings.connections, durationS: settings.warmupS });
    const cpuBefore = serverCpuNs(child.pid);
    const result = await cannon(url, { connections: settings.connections, durationS: settings.durationS });
    const cpuAfter = serverCpuNs(child.pid);
    const refused = result.non2xx + result.errors + result.timeouts;
    const total = result.requests.total;
    const cpuNsPerRequest = cpuBefore === undefined || cpuAfter === undefined || total === 0 ? undefined : (cpuAfter - cpuBefore) / total;
    const cpu = cpuNsPerRequest === undefined ? '' : `, ${(cpuNsPerRequest / 1000).toFixed(1)} µs server CPU per request`;
    log(`${variant}: ${formatInteger(result.requests.average)} req/s, p99 ${result.latency.p99} ms${cpu}, ${refused} not 2xx/failed`);
    return { reqPerSec: result.requests.average, p99Ms: result.latency.p99, refused, total, cpuNsPerRequest };
  } finally {
    await stopServer(child);
  }
}

export async function run({ options, log }) {
  const settings = {
    durationS: Number(options.duration ?? 5),
    warmupS: Number(options.warmup ?? 1),
    connections: Number(options.connections ?? 10),
  };
  const rounds = Number(options.rounds ?? 1);
  const VARIANTS = options['headers-off'] ? [...MAIN, ...HEADERS_OFF] : MAIN;
  log(`${VARIANTS.length} servers × ${rounds} round(s): ${settings.warmupS} s warmup + ${settings.durationS} s at ${settings.connections} connections each`);
  const samples = new Map(VARIANTS.map((v) => [v, []]));
  for (let r = 0; r < rounds; r++) {
    // Rotate the order each round so a burst of load from elsewhere on the machine does not always hit one variant.
    for (let k = 0; k < VARIANTS.length; k++) {
      const variant = VARIANTS[(k + r) % VARIANTS.length];
      samples.get(variant).push(await measure(variant, settings, log));
    }
  }

  // Ranked by server CPU time per request where the platform shows it (see serverCpuNs), else by wall-clock
  // throughput. Both are reported; ns/op is the ranking one.
  const cpuAvailable = [...samples.values()].every((runs) => runs.every((s) => s.cpuNsPerRequest !== undefined));
  const median = (values) => {
    const sorted = [...values].sort((a, b) => a - b);
    return sorted[Math.floor(sorted.length / 2)];
  };
  const rows = VARIANTS.map((name) => {
    const runs = samples.get(name);
    const reqPerSec = median(runs.map((s) => s.reqPerSec));
    const ranked = cpuAvailable ? runs.map((s) => s.cpuNsPerRequest) : runs.map((s) => 1e9 / s.reqPerSec);
    const nsPerOp = median(ranked);
    return {
      name,
      nsPerOp: Math.round(nsPerOp * 10) / 10,
      opsPerSec: Math.round(1e9 / nsPerOp),
      spreadPct: ranked.length > 1 ? Math.round(((Math.max(...ranked) - Math.min(...ranked)) / nsPerOp) * 1000) / 10 : undefined,
      clock: cpuAvailable ? 'cpu' : 'wall',
      reqPerSec: Math.round(reqPerSec),
      p99Ms: Math.max(...runs.map((s) => s.p99Ms)),
      refused: runs.reduce((sum, s) => sum + s.refused, 0),
      requests: runs.reduce((sum, s) => sum + s.total, 0),
    };
  });
  const ratios = [
    { key: 'vsExpress', label: '÷ express', base: 'express' },
    { key: 'vsFastify', label: '÷ fastify', base: 'fastify' },
  ];
  addRatios(rows, ratios);

  // "Faster" compares cost per request: a lower ns/op means more requests per second from the same core.
  const cost = (name) => rows.find((r) => r.name === name).nsPerOp;
  const pct = (v) => `${((v - 1) * 100).toFixed(1)}% more per request`;
  const x = (v) => `${v.toFixed(2)}x the cost`;
  const targets = [
    target('express+sluice at least as fast as express+express-rate-limit', cost('express+sluice') / cost('express+express-rate-limit'), '<=', 1, x),
    target('fastify+sluice at least as fast as fastify+@fastify/rate-limit', cost('fastify+sluice') / cost('fastify+@fastify/rate-limit'), '<=', 1, x),
    target('express+sluice within 10% of bare express', cost('express+sluice') / cost('express'), '<=', 1.1, pct),
    target('fastify+sluice within 10% of bare fastify', cost('fastify+sluice') / cost('fastify'), '<=', 1.1, pct),
    target('no request refused or failed during the runs', rows.reduce((sum, r) => sum + r.refused, 0), '<=', 0, String),
  ];
  return {
    title: `HTTP, GET / on 127.0.0.1, autocannon ${settings.connections} connections, ${settings.durationS} s per server after ${settings.warmupS} s warmup, median of ${rounds} round(s); ${rows[0].clock === 'cpu' ? 'cpu ns/op = server main-thread CPU time per request, ops/s = what one core would serve at that cost' : 'ns/op = 1e9 / req/s'}`,
    rows,
    ratios,
    columns: [
      { key: 'reqPerSec', label: 'req/s (wall)', format: (v) => formatInteger(v) },
      { key: 'p99Ms', label: 'p99 ms', format: (v) => String(v) },
      { key: 'requests', label: 'requests', format: (v) => formatInteger(v) },
    ],
    targets,
    notes: [
      'Peers are configured to send comparable headers: express-rate-limit draft-8 RateLimit fields (legacy off); @fastify/rate-limit its defaults (x-ratelimit-*).',
      'One client address, so every limiter works on a single hot key; each server process has one core, autocannon the other.',
      '--rounds=N for a median of N interleaved rounds; --headers-off adds sluice with headers: false, to separate the decision from the two header fields.',
    ],
    data: { settings, rounds, samples: Object.fromEntries(samples) },
  };
}
