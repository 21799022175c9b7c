// HTTP suite: requests per second through bare Express and Fastify, each with sluice (memory store) and with
// the peer a user would pick instead (express-rate-limit, @fastify/rate-limit), measured with autocannon on
// 127.0.0.1. Each server runs in its own process; autocannon runs here. Limits are far above what a run sends,
// so every request is allowed and the table measures the cost of the limiter, not of refusals. --stack adds
// @sluice/express's trafficStack with its four layers added one at a time, and a table of what each layer adds.
import autocannon from 'autocannon';
import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { target } from '../lib/report.mjs';
import { addRatios, formatInteger, formatRatio } from '../lib/table.mjs';

export const builds = ['@sluice/express', '@sluice/fastify', '@sluice/memory'];
export const description =
  'autocannon on localhost: bare Express/Fastify vs + sluice (memory) vs + express-rate-limit / @fastify/rate-limit';

const SERVER = join(dirname(fileURLToPath(import.meta.url)), 'http', 'server.mjs');
const MAIN = ['express', 'express+sluice', 'express+express-rate-limit', 'fastify', 'fastify+sluice', 'fastify+@fastify/rate-limit'];
const HEADERS_OFF = ['express+sluice (no headers)', 'fastify+sluice (no headers)'];
const STACK = [
  'express+stack(rate)',
  'express+stack(rate,concurrency)',
  'express+stack(rate,concurrency,fleet)',
  'express+stack(all four)',
];
const SLUICE_HEADER = /^"bench";r=\d+;t=\d+$/;
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
  'express+stack(rate)': (h) => SLUICE_HEADER.test(h.ratelimit ?? ''),
  'express+stack(rate,concurrency)': (h) => SLUICE_HEADER.test(h.ratelimit ?? ''),
  'express+stack(rate,concurrency,fleet)': (h) => SLUICE_HEADER.test(h.ratelimit ?? ''),
  'express+stack(all four)': (h) => SLUICE_HEADER.test(h.ratelimit ?? ''),
};
/**
 * The stack variants also answer GET /probe through the same stack with what each layer shows of itself (see
 * useStack in http/server.mjs), checked before the timed run and again after it. The rate layer resolved the
 * client (its RateLimit header is checked above); only trafficStack sets req.trafficStack; a held count of 2 is
 * the stack's lease for the probe request plus the one the handler takes to count (1: the stack took none; more:
 * leases leaked during the run); the worker shedder read its signal, which only its check() does, and is at rest.
 */
const stackLayer = (b) => typeof b.identity === 'string' && b.trafficStack?.refusedBy === undefined && typeof b.trafficStack === 'object';
const concurrencyLayer = (b) => b.concurrencyHeld === 2;
const fleetLayer = (b) => b.fleetHeld === 2;
const workerLayer = (b) => b.workerSignalReads >= 1 && b.workerAmount < 0;
const PROBE = {
  'express+stack(rate)': (b) =>
    stackLayer(b) && b.concurrencyHeld === undefined && b.fleetHeld === undefined && b.workerSignalReads === undefined,
  'express+stack(rate,concurrency)': (b) =>
    stackLayer(b) && concurrencyLayer(b) && b.fleetHeld === undefined && b.workerSignalReads === undefined,
  'express+stack(rate,concurrency,fleet)': (b) =>
    stackLayer(b) && concurrencyLayer(b) && fleetLayer(b) && b.workerSignalReads === undefined,
  'express+stack(all four)': (b) => stackLayer(b) && concurrencyLayer(b) && fleetLayer(b) && workerLayer(b),
};
/** What each layer adds per request: [what, from, to], the difference of the two rows' medians. */
const LAYER_STEPS = [
  ['rate: rateLimit() alone', 'express', 'express+sluice'],
  ['rate: trafficStack({ rate }) vs rateLimit() alone', 'express+sluice', 'express+stack(rate)'],
  ['+ concurrency (memory lease per client)', 'express+stack(rate)', 'express+stack(rate,concurrency)'],
  ['+ fleet (memory lease on the fleet key)', 'express+stack(rate,concurrency)', 'express+stack(rate,concurrency,fleet)'],
  ['+ worker (utilization shedder, default signal)', 'express+stack(rate,concurrency,fleet)', 'express+stack(all four)'],
  ['all four vs rateLimit() alone', 'express+sluice', 'express+stack(all four)'],
];

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

async function probeStack(variant, url, when) {
  const response = await fetch(`${url}probe`);
  const body = await response.json();
  if (response.status !== 200 || !PROBE[variant](body)) {
    throw new Error(
      `${variant}: GET /probe ${when} did not show every layer at work (status ${response.status}, body ${JSON.stringify(body)})`,
    );
  }
  return body;
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
    if (PROBE[variant] !== undefined) await probeStack(variant, url, 'before the run');
    await cannon(url, { connections: settings.connections, durationS: settings.warmupS });
    const cpuBefore = serverCpuNs(child.pid);
    const result = await cannon(url, { connections: settings.connections, durationS: settings.durationS });
    const cpuAfter = serverCpuNs(child.pid);
    let after;
    if (PROBE[variant] !== undefined) {
      const body = await probeStack(variant, url, 'after the run');
      const worker =
        body.workerAmount === undefined
          ? ''
          : `; worker shedder amount ${body.workerAmount.toFixed(3)} (sheds 'read' from 0.333), utilization ${body.workerUtilization.toFixed(2)}`;
      after = `after the run: probe ok${body.concurrencyHeld === undefined ? '' : ', no lease leaked'}${worker}`;
    }
    const refused = result.non2xx + result.errors + result.timeouts;
    const total = result.requests.total;
    const cpuNsPerRequest = cpuBefore === undefined || cpuAfter === undefined || total === 0 ? undefined : (cpuAfter - cpuBefore) / total;
    const cpu = cpuNsPerRequest === undefined ? '' : `, ${(cpuNsPerRequest / 1000).toFixed(1)} µs server CPU per request`;
    log(
      `${variant}: ${formatInteger(result.requests.average)} req/s, p99 ${result.latency.p99} ms${cpu}, ${refused} not 2xx/failed${after === undefined ? '' : `; ${after}`}`,
    );
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
  const VARIANTS = [...MAIN, ...(options['headers-off'] ? HEADERS_OFF : []), ...(options.stack ? STACK : [])];
  log(
    `${VARIANTS.length} servers × ${rounds} round(s): ${settings.warmupS} s warmup + ${settings.durationS} s at ${settings.connections} connections each`,
  );
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
    target(
      'express+sluice at least as fast as express+express-rate-limit',
      cost('express+sluice') / cost('express+express-rate-limit'),
      '<=',
      1,
      x,
    ),
    target(
      'fastify+sluice at least as fast as fastify+@fastify/rate-limit',
      cost('fastify+sluice') / cost('fastify+@fastify/rate-limit'),
      '<=',
      1,
      x,
    ),
    target('express+sluice within 10% of bare express', cost('express+sluice') / cost('express'), '<=', 1.1, pct),
    target('fastify+sluice within 10% of bare fastify', cost('fastify+sluice') / cost('fastify'), '<=', 1.1, pct),
    target(
      'no request refused or failed during the runs',
      rows.reduce((sum, r) => sum + r.refused, 0),
      '<=',
      0,
      String,
    ),
  ];
  const sections = [];
  if (options.stack) {
    // Each step is the difference of two rows' medians; with several rounds, each round's own difference follows
    // (the rows of one round ran minutes apart at most), to show how much of a small step is noise.
    const cpu = (s) => (cpuAvailable ? s.cpuNsPerRequest : 1e9 / s.reqPerSec);
    const perRound = (from, to) => samples.get(to).map((s, i) => (cpu(s) - cpu(samples.get(from)[i])) / 1000);
    const express = cost('express');
    const lines = LAYER_STEPS.map(([what, from, to]) => {
      const added = (cost(to) - cost(from)) / 1000;
      const rounds =
        samples.get(to).length > 1
          ? `  rounds: ${perRound(from, to)
              .map((d) => `${d >= 0 ? '+' : ''}${d.toFixed(1)}`)
              .join(', ')}`
          : '';
      return [
        what,
        `${added >= 0 ? '+' : ''}${added.toFixed(1)} µs`,
        `${((added * 1000 * 100) / express).toFixed(1)}%`,
        formatRatio(cost(to) / cost(from)),
        rounds,
      ];
    });
    const header = ['', 'added/request', '÷ bare express', 'ratio', ''];
    const widths = header.map((h, i) => Math.max(h.length, ...lines.map((l) => l[i].length)));
    const line = (cells) =>
      cells
        .map((c, i) => (i === 0 || i === cells.length - 1 ? c.padEnd(widths[i]) : c.padStart(widths[i])))
        .join('  ')
        .trimEnd();
    sections.push({
      heading: `What each layer adds per request (${cpuAvailable ? 'server CPU' : 'wall'} time, difference of the two rows' medians; ratio = the second row's cost ÷ the first's)`,
      lines: [line(header), ...lines.map(line)],
    });
    targets.splice(
      4,
      0,
      target(
        'express+stack(rate) within 5% of express+sluice (the stack adds nothing when only rate is on)',
        cost('express+stack(rate)') / cost('express+sluice'),
        '<=',
        1.05,
        pct,
      ),
    );
  }
  return {
    title: `HTTP, GET / on 127.0.0.1, autocannon ${settings.connections} connections, ${settings.durationS} s per server after ${settings.warmupS} s warmup, median of ${rounds} round(s); ${rows[0].clock === 'cpu' ? 'cpu ns/op = server main-thread CPU time per request, ops/s = what one core would serve at that cost' : 'ns/op = 1e9 / req/s'}`,
    rows,
    ratios,
    columns: [
      { key: 'reqPerSec', label: 'req/s (wall)', format: (v) => formatInteger(v) },
      { key: 'p99Ms', label: 'p99 ms', format: (v) => String(v) },
      { key: 'requests', label: 'requests', format: (v) => formatInteger(v) },
    ],
    sections,
    targets,
    notes: [
      'Peers are configured to send comparable headers: express-rate-limit draft-8 RateLimit fields (legacy off); @fastify/rate-limit its defaults (x-ratelimit-*).',
      'One client address, so every limiter works on a single hot key; each server process has one core, autocannon the other.',
      '--rounds=N for a median of N interleaved rounds; --headers-off adds sluice with headers: false, to separate the decision from the two header fields.',
      ...(options.stack
        ? [
            "--stack: express+stack(…) is @sluice/express trafficStack with the named layers on one memoryStore (limits and fleet capacity 1e9, worker: createUtilizationShedder() defaults, every request class 'read'); each variant answers GET /probe before and after its run with each layer at work (see http/server.mjs).",
          ]
        : []),
    ],
    data: { settings, rounds, samples: Object.fromEntries(samples) },
  };
}
