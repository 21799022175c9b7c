// tune suite: `sluice tune` over a generated JSON-lines log (10,000,000 lines; 1,000,000 with --quick), each run
// in its own process: reading only, reading and replaying three candidate rules on one thread and on --threads
// (default: every core) side by side, and the same with JSON.parse on every line (--strict) to show what the field
// scan buys. Prints lines/s, the CPU time (the process's and the main thread's) and peak RSS.
import { mkdtempSync, rmSync, statSync } from 'node:fs';
import { availableParallelism, tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { generateLogs } from '@sluice/cli';
import { runNodeChild } from '../lib/child.mjs';
import { target } from '../lib/report.mjs';
import { addRatios, formatInteger } from '../lib/table.mjs';

export const description =
  'sluice tune over a generated 10M-line JSON log (--quick: 1M): lines/s on 1 thread and on --threads (every core), CPU time, peak RSS; field scan vs JSON.parse';
export const builds = ['@sluice/cli'];

const WORKER = join(dirname(fileURLToPath(import.meta.url)), 'tune', 'worker.mjs');
const RULES = ['fixed-window:100/1m', 'sliding-window-counter:100/1m', 'gcra:100/1m:burst=50'];

export async function run({ options, log }) {
  const quick = Boolean(options.quick);
  const lines = Number(options.lines ?? (quick ? 1_000_000 : 10_000_000));
  const threads = Number(options.threads ?? availableParallelism());
  const folder = mkdtempSync(join(tmpdir(), 'sluice-bench-tune-'));
  try {
    const file = join(folder, 'access.jsonl');
    log(`generating ${formatInteger(lines)} lines into ${file}`);
    const generated = performance.now();
    await generateLogs({ lines, format: 'json', seed: 1, output: file });
    const size = statSync(file).size;
    log(`generated ${(size / 2 ** 20).toFixed(0)} MiB in ${((performance.now() - generated) / 1000).toFixed(1)} s`);
    const oneThread = `scan + ${RULES.length} candidates, 1 thread`;
    const variants = [
      { name: 'read only (scan), 1 thread', args: ['scan', '1'] },
      { name: oneThread, args: ['scan', '1', ...RULES] },
      { name: `scan + ${RULES.length} candidates, ${threads} threads`, args: ['scan', String(threads), ...RULES] },
      { name: `JSON.parse + ${RULES.length} candidates, 1 thread`, args: ['strict', '1', ...RULES] },
    ];
    const rows = [];
    for (const variant of variants) {
      log(`${variant.name}...`);
      const r = await runNodeChild(WORKER, { args: [file, ...variant.args], execArgv: [], timeoutMs: 900_000 });
      if (r.lines !== lines) throw new Error(`${variant.name} read ${r.lines} lines, expected ${lines}`);
      const linesPerSec = (r.lines / r.elapsedMs) * 1000;
      log(`${variant.name}: ${formatInteger(linesPerSec)} lines/s, peak RSS ${(r.peakRssBytes / 2 ** 20).toFixed(0)} MiB`);
      rows.push({
        name: variant.name,
        nsPerOp: (r.elapsedMs * 1e6) / r.lines,
        opsPerSec: linesPerSec,
        seconds: r.elapsedMs / 1000,
        cpuSeconds: r.cpuMs / 1000,
        mainCpuSeconds: r.mainCpuMs === undefined ? undefined : r.mainCpuMs / 1000,
        linesPerCpuSecond: (r.lines / r.cpuMs) * 1000,
        peakRssMiB: r.peakRssBytes / 2 ** 20,
        scannedPct: (100 * r.scanned) / Math.max(1, r.scanned + r.jsonParsed),
        identities: r.identities,
      });
    }
    const threaded = rows[2];
    const ratios = [{ key: 'vsOneThread', label: '÷ 1 thread', base: oneThread }];
    addRatios(rows, ratios);
    return {
      title: `sluice tune: ${formatInteger(lines)} JSON lines (${(size / 2 ** 20).toFixed(0)} MiB, ${formatInteger(rows[0].identities)} identities), one process per run, ${availableParallelism()} cores available; ns/op and ops/s are per line, wall clock`,
      rows,
      ratios,
      columns: [
        { key: 'seconds', label: 'seconds', format: (v) => v.toFixed(1) },
        { key: 'cpuSeconds', label: 'CPU s', format: (v) => v.toFixed(1) },
        { key: 'mainCpuSeconds', label: 'main thread CPU s', format: (v) => v.toFixed(1) },
        { key: 'linesPerCpuSecond', label: 'lines per CPU s', format: formatInteger },
        { key: 'peakRssMiB', label: 'peak RSS', format: (v) => `${v.toFixed(0)} MiB` },
        { key: 'scannedPct', label: 'scanned', format: (v) => `${v.toFixed(1)}%` },
      ],
      targets: [
        target(
          `>= 1,000,000 lines/s, JSON lines, replaying candidates, ${threads} threads`,
          threaded.opsPerSec,
          '>=',
          1_000_000,
          formatInteger,
        ),
      ],
      notes: [
        `Candidates: ${RULES.join(', ')}. "scanned" is the share of lines read by the field scan; the rest (lines with an escape) went to JSON.parse.`,
        'Peak RSS is the whole process (Node itself is about 45 MiB); it grows with identities, not lines.',
        'With threads, worker threads read (their own byte ranges of the file) and parse, and the main thread reorders and replays: "CPU s" is every thread\'s time, "main thread CPU s" the main thread\'s (Linux), the floor of the wall time however many cores. On a machine shared with other work, wall time exceeds CPU time / cores.',
      ],
      data: { lines, bytes: size, rules: RULES, threads },
    };
  } finally {
    rmSync(folder, { recursive: true, force: true });
  }
}
