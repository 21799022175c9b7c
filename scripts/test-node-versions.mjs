#!/usr/bin/env node
// `pnpm test`'s last step: the tests of the packages whose behaviour can differ between Node versions, again on
// Node 22 and 24, the versions scripts/install-node-versions.sh unpacks into .tools/ (the machine's Node, 20, ran
// every package's tests just before). A package runs here when it depends on a native addon (better-sqlite3: its
// compiled code is per Node ABI) or its src imports a `node:` module at run time (not `import type`): today
// packages/stores/sqlite and packages/cli (worker threads, streams, fs, child processes, an HTTP server). The others
// import no Node API and no native code: their src is ES2022 on web-standard APIs (core, http, memory, upstash,
// tiered, otel, hono and next also pass under vitest's edge-runtime environment), and what Node provides under them
// (sockets in ioredis, node:http under Express and Fastify) is those libraries' code, tested by them on every Node.
// Rerunning them on 22 and 24 took half of `pnpm test`'s time for no coverage; `--all` still does it.
// Each package's vitest runs under that Node, with its bin first on the PATH so that the processes a test spawns
// (`node`, workers) run on it too. Built output is shared: tsup targets Node 20, which 22 and 24 run.
// Packages that depend on better-sqlite3 run with
// NODE_OPTIONS=--require=scripts/node-versions/better-sqlite3-redirect.cjs: its native module in node_modules is
// built for the Node that installed it (20), so that preload sends every load of it to the copy built for the
// running Node (.tools/better-sqlite3-node-<major>, by scripts/node-versions/build-better-sqlite3.mjs, which
// install-node-versions.sh runs). Processes the tests start inherit NODE_OPTIONS unless a test gives them an
// environment without it. Node 24's copy is compiled against 24.18.1's headers (see build-better-sqlite3.mjs).
// A run in LEFT_OUT (none today) would be named with its reason, not run.
// Usage: node scripts/test-node-versions.mjs [--all] [--only <package dir>] [--left-out] [major ...]   (default: 22 24)
//   --all                           every package with a test:unit script, not only the Node-specific ones
//   --only packages/stores/sqlite   runs that package only (repeatable; any package)
//   --left-out                      runs the LEFT_OUT ones too
import { spawnSync } from 'node:child_process';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const args = process.argv.slice(2);
const only = [];
let runLeftOut = false;
let all = false;
const majors = [];
for (let i = 0; i < args.length; i++) {
  if (args[i] === '--only' && args[i + 1] !== undefined) only.push(relative(root, resolve(args[++i])));
  else if (args[i] === '--left-out') runLeftOut = true;
  else if (args[i] === '--all') all = true;
  else if (/^\d+$/.test(args[i])) majors.push(args[i]);
  else {
    console.error(
      `test-node-versions: unknown argument ${args[i]}\nUsage: node scripts/test-node-versions.mjs [--all] [--only <package dir>] [--left-out] [major ...]`,
    );
    process.exit(2);
  }
}
if (majors.length === 0) majors.push('22', '24');
const REDIRECT = join(root, 'scripts', 'node-versions', 'better-sqlite3-redirect.cjs');
/** `<package dir>@<major>` left out, with the reason printed in the summary (none today). */
const LEFT_OUT = new Map();

function packageDirs() {
  const dirs = [];
  const visit = (dir, depth) => {
    if (existsSync(join(dir, 'package.json'))) {
      const manifest = JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8'));
      if (manifest.scripts?.['test:unit'] !== undefined) {
        const deps = { ...manifest.dependencies, ...manifest.devDependencies, ...manifest.peerDependencies };
        const native = 'better-sqlite3' in deps;
        dirs.push({ dir, native, nodeSpecific: native || importsNode(join(dir, 'src')) });
      }
      return;
    }
    if (depth === 0) return;
    for (const entry of readdirSync(dir, { withFileTypes: true })) {
      if (entry.isDirectory() && entry.name !== 'node_modules') visit(join(dir, entry.name), depth - 1);
    }
  };
  visit(join(root, 'packages'), 2);
  const picked = dirs.filter(({ dir, nodeSpecific }) => (only.length === 0 ? all || nodeSpecific : only.includes(relative(root, dir))));
  if (picked.length === 0) {
    console.error(`test-node-versions: no package with a test:unit script matches --only ${only.join(' ')}`);
    process.exit(2);
  }
  return picked.sort((a, b) => a.dir.localeCompare(b.dir));
}

/** Whether a .ts file under `dir` imports a `node:` module at run time (`import type` does not count). */
function importsNode(dir) {
  if (!existsSync(dir)) return false;
  return readdirSync(dir, { withFileTypes: true, recursive: true }).some(
    (entry) =>
      entry.isFile() &&
      entry.name.endsWith('.ts') &&
      /^\s*(?:import(?!\s+type\b)[^;]*?from\s*|import\s*\(\s*|export(?!\s+type\b)[^;]*?from\s*)['"]node:/m.test(
        readFileSync(join(entry.parentPath ?? entry.path, entry.name), 'utf8'),
      ),
  );
}

await backgroundInstall();

/**
 * scripts/test-setup.sh (`pnpm test`'s first step) installs Node 22 and 24 and their better-sqlite3 in the background
 * while the rest of the tests run: waits for it to write .tools/node-versions.status (its exit code), and fails with its
 * log if it failed. Run on its own (no status file and no install under way), it runs the install in the foreground.
 */
async function backgroundInstall() {
  const tools = join(root, '.tools');
  const statusFile = join(tools, 'node-versions.status');
  const logFile = join(tools, 'node-versions.log');
  const pidFile = join(tools, 'node-versions.pid');
  const running = () => {
    try {
      process.kill(Number(readFileSync(pidFile, 'utf8')), 0);
      return true;
    } catch {
      return false;
    }
  };
  if (!existsSync(statusFile) && !(existsSync(pidFile) && running())) {
    const run = spawnSync('sh', [join(root, 'scripts', 'install-node-versions.sh')], { stdio: 'inherit' });
    if (run.status !== 0) process.exit(run.status ?? 1);
    return;
  }
  const waitedFrom = Date.now();
  let said = false;
  // Bounded: two SQLite builds take minutes; 30 minutes means the background install is stuck.
  while (!existsSync(statusFile)) {
    if (!running() && !existsSync(statusFile)) {
      console.error(
        `test-node-versions: the background install stopped without a status; its log:\n${existsSync(logFile) ? readFileSync(logFile, 'utf8') : '(no log)'}`,
      );
      process.exit(1);
    }
    if (!said) console.log('test-node-versions: waiting for the background install of Node 22 and 24 (.tools/node-versions.log)');
    said = true;
    if (Date.now() - waitedFrom > 30 * 60_000) {
      console.error(`test-node-versions: the background install wrote no status in 30 minutes; its log:\n${readFileSync(logFile, 'utf8')}`);
      process.exit(1);
    }
    await new Promise((resolve) => setTimeout(resolve, 1000));
  }
  if (said) console.log(`test-node-versions: the install finished after ${Math.round((Date.now() - waitedFrom) / 1000)} s more`);
  const status = readFileSync(statusFile, 'utf8').trim();
  if (status !== '0') {
    console.error(
      `test-node-versions: the background install of Node 22 and 24 failed (exit ${status}); its log:\n${existsSync(logFile) ? readFileSync(logFile, 'utf8') : '(no log)'}`,
    );
    process.exit(1);
  }
}

const results = [];
for (const major of majors) {
  const node = join(root, '.tools', `node-${major}`, 'bin', 'node');
  if (!existsSync(node)) {
    console.error(
      `test-node-versions: ${relative(root, node)} is missing. Install it with\n  sh scripts/test-setup.sh\n(pnpm test's first step).`,
    );
    process.exit(1);
  }
  const version = spawnSync(node, ['--version'], { encoding: 'utf8' }).stdout.trim();
  const addon = join(
    root,
    '.tools',
    `better-sqlite3-node-${major}`,
    'node_modules',
    'better-sqlite3',
    'build',
    'Release',
    'better_sqlite3.node',
  );
  for (const { dir, native } of packageDirs()) {
    const name = relative(root, dir);
    if (LEFT_OUT.has(`${name}@${major}`) && !runLeftOut) {
      results.push({ version, name, status: 'left out', detail: LEFT_OUT.get(`${name}@${major}`) });
      continue;
    }
    if (native && !existsSync(addon)) {
      console.error(
        `test-node-versions: ${relative(root, addon)} is missing (better-sqlite3 for Node ${major}, which ${name} needs). Build it with\n  node scripts/node-versions/build-better-sqlite3.mjs ${major}\n(what scripts/test-setup.sh, pnpm test's first step, does).`,
      );
      process.exit(1);
    }
    // The vitest that package resolves (its own node_modules, else the workspace root's).
    const vitest = join(dirname(createRequire(join(dir, 'package.json')).resolve('vitest/package.json')), 'vitest.mjs');
    console.log(`\n+ ${version}: ${name}`);
    const started = Date.now();
    const run = spawnSync(node, [vitest, 'run'], {
      cwd: dir,
      stdio: 'inherit',
      env: {
        ...process.env,
        PATH: `${dirname(node)}:${process.env.PATH ?? ''}`,
        ...(native ? { NODE_OPTIONS: `${process.env.NODE_OPTIONS ?? ''} --require=${REDIRECT}`.trim() } : {}),
      },
    });
    const seconds = ((Date.now() - started) / 1000).toFixed(0);
    const how = native ? ', better-sqlite3 built for it' : '';
    results.push({ version, name, status: run.status === 0 ? 'passed' : 'FAILED', detail: `${seconds} s${how}` });
  }
}

console.log(`\ntest-node-versions: ${all ? "every package's tests" : "the Node-specific packages' tests"} on the other Node versions`);
for (const r of results) console.log(`  ${r.version.padEnd(9)} ${r.name.padEnd(34)} ${r.status.padEnd(9)} ${r.detail}`);
const failed = results.filter((r) => r.status === 'FAILED');
if (failed.length > 0) {
  console.error(`test-node-versions: ${failed.length} package run(s) failed`);
  process.exit(1);
}
