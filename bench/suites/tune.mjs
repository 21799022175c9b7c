// tune suite: `sluice tune` over a generated JSON-lines log (10,000,000 lines; 1,000,000 with --quick), each run
// in its own process: reading only, reading and replaying three candidate rules, and the same with JSON.parse on
// every line (--strict) to show what the field scan buys. Prints lines/s per core (one thread) and peak RSS.
import { mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { generateLogs } from '@sluice/cli';
import { runNodeChild } from '../lib/child.mjs';
import { target } from '../lib/report.mjs';
import { formatInteger } from '../lib/table.mjs';

export const description =
  'sluice tune over a generated 10M-line JSON log (--quick: 1M): lines/s per core and peak RSS; field scan vs JSON.parse';
export const builds = ['@sluice/cli'];

const WORKER = join(dirname(fileURLToPath(import.meta.url)), 'tune', 'worker.mjs');
const RULES = ['fixed-window:100/1m', 'sliding-window-counter:100/1m', 'gcra:100/1m:burst=50'];

export async function run({ options, log }) {
  const quick = Boolean(options.quick);
  const lines = Number(options.lines ?? (quick ? 1_000_000 : 10_000_000));
  const folder = mkdtempSync(join(tmpdir(), 'sluice-bench-tune-'));
  try {
    const file = join(folder, 'access.jsonl');
    log(`generating ${formatInteger(lines)} lines into ${file}`);
    const generated = performance.now();
    await generateLogs({ lines, format: 'json', seed: 1, output: file });
    const size = statSync(file).size;
    log(`generated ${(size / 2 ** 20).toFixed(0)} MiB in ${((performance.now() - generated) / 1000).toFixed(1)} s`);
    const variants = [
      { name: 'read only (scan)', args: ['scan'] },
      { name: `scan + ${RULES.length} candidates`, args: ['scan', ...RULES] },
      { name: `JSON.parse + ${RULES.length} candidates`, args: ['strict', ...RULES] },
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
        peakRssMiB: r.peakRssBytes / 2 ** 20,
        scannedPct: (100 * r.scanned) / Math.max(1, r.scanned + r.jsonParsed),
        identities: r.identities,
      });
    }
    const replay = rows[1];
    return {
      title: `sluice tune: ${formatInteger(lines)} JSON lines (${(size / 2 ** 20).toFixed(0)} MiB, ${formatInteger(rows[0].identities)} identities), one process per run, one thread; ns/op and ops/s are per line`,
      rows,
      columns: [
        { key: 'seconds', label: 'seconds', format: (v) => v.toFixed(1) },
        { key: 'peakRssMiB', label: 'peak RSS', format: (v) => `${v.toFixed(0)} MiB` },
        { key: 'scannedPct', label: 'scanned', format: (v) => `${v.toFixed(1)}%` },
      ],
      targets: [
        target('>= 1,000,000 lines/s per core, JSON lines, replaying candidates', replay.opsPerSec, '>=', 1_000_000, formatInteger),
      ],
      notes: [
        `Candidates: ${RULES.join(', ')}. "scanned" is the share of lines read by the field scan; the rest (lines with an escape) went to JSON.parse.`,
        'Peak RSS is the whole process (Node itself is about 45 MiB); it grows with identities, not lines.',
      ],
      data: { lines, bytes: size, rules: RULES },
    };
  } finally {
    rmSync(folder, { recursive: true, force: true });
  }
}
