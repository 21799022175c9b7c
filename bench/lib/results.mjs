// Writes bench/results/<suite>.json (git-ignored): `{ suite, rows: [{ name, nsPerOp, opsPerSec, ...extra }] }`
// plus the targets, free-form data and the environment the numbers were measured in.
import { spawnSync } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import { cpus, loadavg, totalmem } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

export const RESULTS_DIR = join(dirname(fileURLToPath(import.meta.url)), '..', 'results');

export function writeResults(suite, report, environment) {
  mkdirSync(RESULTS_DIR, { recursive: true });
  const file = join(RESULTS_DIR, `${suite}.json`);
  const body = { suite, rows: report.rows, targets: report.targets ?? [], data: report.data ?? {}, environment };
  writeFileSync(file, `${JSON.stringify(body, null, 2)}\n`);
  return file;
}

/** What the numbers depend on: runtime, CPU, load (the machine may be shared) and the commit measured. */
export function environment() {
  const git = spawnSync('git', ['rev-parse', '--short', 'HEAD'], { encoding: 'utf8' });
  const dirty = spawnSync('git', ['status', '--porcelain', '--untracked-files=no'], { encoding: 'utf8' });
  return {
    date: new Date().toISOString(),
    node: process.version,
    v8: process.versions.v8,
    platform: `${process.platform}-${process.arch}`,
    cpu: cpus()[0]?.model ?? 'unknown',
    cores: cpus().length,
    memoryGiB: Math.round(totalmem() / 2 ** 30),
    loadAverage: loadavg().map((l) => Math.round(l * 100) / 100),
    commit: git.status === 0 ? git.stdout.trim() + (dirty.stdout.trim() === '' ? '' : '+dirty') : 'unknown',
  };
}
