#!/usr/bin/env node
// Entry point of `pnpm bench [suite] [--flags]`. Lists the suites when called without one; otherwise builds the
// workspace packages the benchmarks import (turbo, cached), runs the suite, prints its report and writes
// bench/results/<suite>.json. See bench/README.md for how to add a suite.
import { spawnSync } from 'node:child_process';
import { readFileSync, readdirSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { formatReport } from './lib/report.mjs';
import { environment, writeResults } from './lib/results.mjs';

const here = dirname(fileURLToPath(import.meta.url));
const suitesDir = join(here, 'suites');
const root = join(here, '..');

const argv = process.argv.slice(2);
const positional = argv.filter((a) => !a.startsWith('--'));
const options = Object.fromEntries(
  argv
    .filter((a) => a.startsWith('--'))
    .map((a) => {
      const [key, value] = a.slice(2).split('=', 2);
      return [key, value ?? true];
    }),
);

const suiteNames = readdirSync(suitesDir)
  .filter((f) => /^[a-z0-9-]+\.mjs$/.test(f))
  .map((f) => f.slice(0, -4))
  .sort();

if (positional.length === 0 || options.help) {
  console.log('Usage: pnpm bench <suite> [--check] [--no-build] [suite options]\n\nSuites:');
  for (const name of suiteNames) {
    let description;
    try {
      description = (await import(pathToFileURL(join(suitesDir, `${name}.mjs`)).href)).description;
    } catch (error) {
      description = `(cannot load: ${error.message.split('\n')[0]})`;
    }
    console.log(`  ${name.padEnd(10)} ${description ?? ''}`);
  }
  console.log('\n--check exits 1 when a target is not met; --no-build skips building the workspace packages first.');
  process.exit(0);
}

const [suite] = positional;
if (!suiteNames.includes(suite)) {
  console.error(`Unknown suite ${JSON.stringify(suite)}. Suites: ${suiteNames.join(', ')}`);
  process.exit(1);
}

// Harness rounds start from a collected heap; that needs gc exposed, so re-run this script with it.
if (typeof globalThis.gc !== 'function') {
  const child = spawnSync(process.execPath, ['--expose-gc', fileURLToPath(import.meta.url), ...argv], { stdio: 'inherit' });
  process.exit(child.status ?? 1);
}

const suiteFile = join(suitesDir, `${suite}.mjs`);

if (!options['no-build']) {
  // Benchmarks import the packages' built dist/; build what is stale so the numbers are for the current source.
  // A suite may name the packages it imports (`export const builds = ['@sluice/memory']`, dependencies included),
  // read from its source because importing it would load those packages before they are built; otherwise every
  // workspace package this one depends on is built.
  const declared = /^export const builds = \[([^\]]*)\]/m.exec(readFileSync(suiteFile, 'utf8'));
  const names = declared ? [...declared[1].matchAll(/'([^']+)'|"([^"]+)"/g)].map((m) => m[1] ?? m[2]) : [];
  const filters = names.length > 0 ? names.map((name) => `--filter=${name}...`) : ['--filter=@sluice/bench^...'];
  const build = spawnSync('pnpm', ['exec', 'turbo', 'run', 'build', ...filters, '--output-logs=errors-only'], {
    cwd: root,
    env: { ...process.env, TURBO_TELEMETRY_DISABLED: '1', DO_NOT_TRACK: '1' },
    stdio: ['ignore', 'ignore', 'inherit'],
  });
  if (build.status !== 0) {
    console.error('bench: building the workspace packages failed (run `pnpm build` to see why)');
    process.exit(1);
  }
}

const module = await import(pathToFileURL(suiteFile).href);
const log = (line) => process.stderr.write(`[${suite}] ${line}\n`);
const before = environment();
const report = await module.run({ options, log });
const env = { ...before, loadAverageAfter: environment().loadAverage };
console.log(formatReport(report));
console.log(
  `\nload average (1/5/15 min) before: ${env.loadAverage.join(' ')}, after: ${env.loadAverageAfter.join(' ')}; ${env.cores} cores, ${env.cpu}, node ${env.node}`,
);
const file = writeResults(suite, report, env);
console.log(`results: ${file.slice(root.length + 1)}`);
if (options.check && (report.targets ?? []).some((t) => !t.met)) process.exit(1);
