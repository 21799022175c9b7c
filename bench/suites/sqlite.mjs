// SQLite suite: sluice's SQLite store against rate-limiter-flexible's RateLimiterSQLite (better-sqlite3), one
// process, token bucket, 10,000 identities, each contestant on its own file with the same settings (WAL,
// synchronous=NORMAL); then four processes sharing one file, for each library.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { runNodeChild } from '../lib/child.mjs';
import { compare } from '../lib/harness.mjs';
import { target } from '../lib/report.mjs';
import { median } from '../lib/stats.mjs';
import { addRatios, formatInteger, formatRatio } from '../lib/table.mjs';
import { CAPACITY, IDENTITIES, REFILL_PER_SECOND, WINDOW_MS } from './memory/workload.mjs';
import { FLOOR, RLF, SLUICE_LIMIT, SLUICE_SYNC, contestants, openDatabase, rlfLimiter, sluiceLimiter } from './sqlite/contestants.mjs';

export const description =
  'one file: sluice SQLite store vs rate-limiter-flexible RateLimiterSQLite and a bare UPSERT; four processes on one file';

const WORKER = join(dirname(fileURLToPath(import.meta.url)), 'sqlite', 'worker.mjs');
const PROCESSES = 4;

export async function run({ options, log }) {
  const quick = Boolean(options.quick);
  const ops = Number(options.ops ?? (quick ? 20_000 : 50_000));
  const rounds = Number(options.rounds ?? (quick ? 3 : 7));
  const warmupRounds = Number(options.warmup ?? (quick ? 1 : 2));
  const processOps = Number(options.processOps ?? (quick ? 20_000 : 50_000));
  const repeats = Number(options.repeats ?? (quick ? 1 : 3));
  const folder = mkdtempSync(join(tmpdir(), 'sluice-bench-sqlite-'));
  try {
    log(`files in ${folder}; timing ${ops} decisions per round, ${warmupRounds} warmup + ${rounds} rounds, contestants interleaved`);
    const single = contestants(folder, rounds);
    let rows;
    try {
      rows = await compare(single.list, { ops, rounds, warmupRounds, log });
    } finally {
      single.close();
    }
    const ratios = [
      { key: 'vsRlf', label: '÷ rlf', base: RLF },
      { key: 'vsFloor', label: '÷ floor', base: FLOOR },
    ];
    addRatios(rows, ratios);

    log(`${PROCESSES} processes on one file, ${processOps} decisions each, ${repeats} repeat(s) per library`);
    const multi = { sluice: [], rlf: [] };
    for (let r = 0; r < repeats; r++) {
      for (const name of r % 2 === 0 ? ['sluice', 'rlf'] : ['rlf', 'sluice']) {
        multi[name].push(await fourProcesses(name, join(folder, `${name}-shared-${r}.db`), processOps));
        log(`${name} ${r + 1}/${repeats}: ${formatInteger(multi[name].at(-1).decisionsPerSec)} decisions/s`);
      }
    }

    const byName = (name) => rows.find((row) => row.name === name);
    const speedup = byName(RLF).nsPerOp / byName(SLUICE_LIMIT).nsPerOp;
    const syncSpeedup = byName(RLF).nsPerOp / byName(SLUICE_SYNC).nsPerOp;
    const cpuSpeedup = byName(RLF).processCpuNsPerOp / byName(SLUICE_LIMIT).processCpuNsPerOp;
    const perSec = (name) => median(multi[name].map((m) => m.decisionsPerSec));
    const multiSpeedup = perSec('sluice') / perSec('rlf');
    const multiLine = (name, label) => {
      const runs = multi[name];
      const cpu = median(runs.map((m) => m.cpuNsPerOp));
      const allowed = median(runs.map((m) => m.allowedPct));
      return `${label.padEnd(30)} ${formatInteger(perSec(name)).padStart(8)} decisions/s  (runs: ${runs.map((m) => formatInteger(m.decisionsPerSec)).join(', ')}; CPU ${(cpu / 1000).toFixed(1)} µs per decision; allowed ${allowed.toFixed(1)}%; degraded ${runs.reduce((s, m) => s + m.degraded, 0)})`;
    };

    return {
      title: `SQLite, one process, ${formatInteger(IDENTITIES)} identities, token bucket (capacity ${CAPACITY}, ${REFILL_PER_SECOND}/s refill), one file per contestant (WAL, synchronous=NORMAL), ${formatInteger(ops)} decisions per round, median of ${rounds} rounds after ${warmupRounds} warmup`,
      rows,
      ratios,
      columns: [
        { key: 'processCpuNsPerOp', label: 'process CPU µs/op', format: (v) => (v / 1000).toFixed(1) },
        { key: 'allowedPct', label: 'allowed', format: (v) => `${v.toFixed(1)}%` },
      ],
      sections: [
        {
          heading: `${PROCESSES} processes on one file, ${formatInteger(processOps)} decisions each (total ÷ first start to last end; median of ${repeats})`,
          lines: [
            multiLine('sluice', 'sluice limitSync()'),
            multiLine('rlf', 'rate-limiter-flexible consume'),
            `sluice ÷ rate-limiter-flexible: ${multiSpeedup.toFixed(2)}x the decisions per second`,
          ],
        },
      ],
      targets: [
        target(
          'sluice limit() at least 1.5x the decisions per second of rate-limiter-flexible consume (one process)',
          speedup,
          '>=',
          1.5,
          (v) => `${v.toFixed(2)}x`,
        ),
      ],
      notes: [
        'Ratios are time per decision divided by the base row\'s: below 1.00x is faster. "spread" is half the (max − min) range of the rounds around the median.',
        '"process CPU µs/op" is the process CPU time (user + system) per decision, median over the timed rounds: what a decision costs when it does not wait for a core.',
        `RateLimiterSQLite has no token bucket: it runs a fixed window of ${CAPACITY} points per ${WINDOW_MS / 1000} s (same rate and burst), one UPSERT ... RETURNING per decision; sluice runs SELECT + core's step + UPSERT in one BEGIN IMMEDIATE transaction. The floor is one prepared fixed-window UPSERT in autocommit.`,
        `The workload never empties a bucket (each identity comes back about every ${formatInteger(IDENTITIES)} decisions, refilled by then): every decision is a consume that writes.`,
        `speedups: limit() ${formatRatio(speedup)}, limitSync() ${formatRatio(syncSpeedup)}, CPU per decision ${formatRatio(cpuSpeedup)}.`,
      ],
      data: {
        limitSpeedupVsRlf: round2(speedup),
        limitSyncSpeedupVsRlf: round2(syncSpeedup),
        cpuSpeedupVsRlf: round2(cpuSpeedup),
        fourProcesses: { processOps, sluice: multi.sluice, rlf: multi.rlf, speedup: round2(multiSpeedup) },
      },
    };
  } finally {
    rmSync(folder, { recursive: true, force: true });
  }
}

/** Creates the file and its table first, then starts four workers together and aggregates what they did. */
async function fourProcesses(name, file, processOps) {
  const setup = openDatabase(file);
  if (name === 'sluice') sluiceLimiter(setup);
  else await rlfLimiter(setup);
  setup.close();
  // Node startup plus loading better-sqlite3 takes a few hundred ms; more on a loaded machine.
  const startAt = Date.now() + 3000;
  const results = await Promise.all(
    Array.from({ length: PROCESSES }, (_, i) =>
      runNodeChild(WORKER, { args: [name, file, String(processOps), String(startAt), String(i * 16_384)], execArgv: [] }),
    ),
  );
  const total = results.reduce((sum, r) => sum + r.ops, 0);
  const firstStart = Math.min(...results.map((r) => r.startEpochMs));
  const lastEnd = Math.max(...results.map((r) => r.endEpochMs));
  return {
    decisionsPerSec: Math.round((total * 1000) / Math.max(1, lastEnd - firstStart)),
    cpuNsPerOp: Math.round(results.reduce((sum, r) => sum + r.cpuNs, 0) / total),
    allowedPct: Math.round((results.reduce((sum, r) => sum + r.allowed, 0) / total) * 1000) / 10,
    degraded: results.reduce((sum, r) => sum + r.degraded, 0),
    perProcess: results.map((r) => ({
      ops: r.ops,
      allowed: r.allowed,
      elapsedMs: Math.round(r.elapsedNs / 1e6),
      startedLateMs: r.startedLateMs,
    })),
  };
}

function round2(value) {
  return Math.round(value * 100) / 100;
}
