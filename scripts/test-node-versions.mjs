#!/usr/bin/env node
// `pnpm test`'s last step: every package's own tests (packages/**, `test:unit`) again on Node 22 and 24, the
// versions scripts/install-node-versions.sh unpacks into .tools/ (the machine's Node, 20, ran them just before).
// Each package's vitest runs under that Node, with its bin first on the PATH so that the processes a test spawns
// (`node`, workers) run on it too. Built output is shared: tsup targets Node 20, which 22 and 24 run.
// Packages whose tests load better-sqlite3 are left out and named: its native module is built for the Node that
// installed it (20), and building it for another needs that version's headers and a second copy of the module.
// Usage: node scripts/test-node-versions.mjs [major ...]   (default: 22 24)
import { spawnSync } from 'node:child_process';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const majors = process.argv.length > 2 ? process.argv.slice(2) : ['22', '24'];
/** Left out on the other versions, with the reason printed in the summary. */
const NATIVE = new Map([
  ['packages/stores/sqlite', 'better-sqlite3 is a native module built for Node 20 by `pnpm install`'],
  ['packages/cli', 'its tests open SQLite files through better-sqlite3 (native, built for Node 20)'],
]);

function packageDirs() {
  const dirs = [];
  const visit = (dir, depth) => {
    if (existsSync(join(dir, 'package.json'))) {
      const manifest = JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8'));
      if (manifest.scripts?.['test:unit'] !== undefined) dirs.push(dir);
      return;
    }
    if (depth === 0) return;
    for (const entry of readdirSync(dir, { withFileTypes: true })) {
      if (entry.isDirectory() && entry.name !== 'node_modules') visit(join(dir, entry.name), depth - 1);
    }
  };
  visit(join(root, 'packages'), 2);
  return dirs.sort();
}

const results = [];
for (const major of majors) {
  const node = join(root, '.tools', `node-${major}`, 'bin', 'node');
  if (!existsSync(node)) {
    console.error(`test-node-versions: ${relative(root, node)} is missing. Install it with\n  sh scripts/install-node-versions.sh\n(what the README's install command runs).`);
    process.exit(1);
  }
  const version = spawnSync(node, ['--version'], { encoding: 'utf8' }).stdout.trim();
  for (const dir of packageDirs()) {
    const name = relative(root, dir);
    if (NATIVE.has(name)) {
      results.push({ version, name, status: 'left out', detail: NATIVE.get(name) });
      continue;
    }
    // The vitest that package resolves (its own node_modules, else the workspace root's).
    const vitest = join(dirname(createRequire(join(dir, 'package.json')).resolve('vitest/package.json')), 'vitest.mjs');
    console.log(`\n+ ${version}: ${name}`);
    const started = Date.now();
    const run = spawnSync(node, [vitest, 'run'], {
      cwd: dir,
      stdio: 'inherit',
      env: { ...process.env, PATH: `${dirname(node)}:${process.env.PATH ?? ''}` },
    });
    const seconds = ((Date.now() - started) / 1000).toFixed(0);
    results.push({ version, name, status: run.status === 0 ? 'passed' : 'FAILED', detail: `${seconds} s` });
  }
}

console.log('\ntest-node-versions: every package\'s tests on the other Node versions');
for (const r of results) console.log(`  ${r.version.padEnd(9)} ${r.name.padEnd(34)} ${r.status.padEnd(9)} ${r.detail}`);
const failed = results.filter((r) => r.status === 'FAILED');
if (failed.length > 0) {
  console.error(`test-node-versions: ${failed.length} package run(s) failed`);
  process.exit(1);
}
