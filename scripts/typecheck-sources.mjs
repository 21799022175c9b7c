#!/usr/bin/env node
// `pnpm test:fast`'s typecheck: every package's `typecheck` (each `tsc --noEmit -p <tsconfig>` in its script) with no
// build first. `pnpm typecheck` checks a package against the declarations its dependencies build into dist/; here each
// tsconfig is extended with `paths` that send every `@sluice/*` specifier to its source entry (the same map
// scripts/vitest-sources.mjs gives the tests). So:
// - the sources of the other packages join the program, compiled with this package's options (its lib and types,
//   which may lack Node's): their diagnostics are dropped here, since each package's own run reports its own files;
// - the diagnostics in test files that import from dist/ are dropped too (`pnpm typecheck` reports them, after the
//   build); the files stay in the program, since the types they pull in (Node's) are part of what the others see.
// Two at a time (two cores), incremental: the generated configs and build info live in node_modules/.cache/typecheck-sources.
// Usage: node scripts/typecheck-sources.mjs
import { spawn } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { availableParallelism } from 'node:os';
import { dirname, isAbsolute, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { sourceEntries } from './vitest-sources.mjs';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const cache = join(root, 'node_modules', '.cache', 'typecheck-sources');
const tsc = join(root, 'node_modules', 'typescript', 'bin', 'tsc');
const entries = sourceEntries();
const paths = Object.fromEntries([...entries].map(([specifier, file]) => [specifier, [file]]));
// redis-script's `virtual:sluice-lua` is declared in a file no import reaches: listed so that importers see it.
const ambient = [join(root, 'packages', 'stores', 'redis-script', 'src', 'virtual-sluice-lua.d.ts')];

/** Every workspace package with a typecheck script, and the tsconfig files it checks. */
function typechecks() {
  const found = [];
  const visit = (dir, depth) => {
    if (existsSync(join(dir, 'package.json'))) {
      const script = JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8')).scripts?.typecheck;
      if (script === undefined) return;
      for (const step of script.split('&&')) {
        const config = /^\s*tsc --noEmit -p (\S+)\s*$/.exec(step)?.[1];
        if (config === undefined) {
          throw new Error(
            `typecheck-sources: ${relative(root, dir)}'s typecheck script has a step other than \`tsc --noEmit -p <file>\`: ${script}`,
          );
        }
        found.push({ dir, config: join(dir, config) });
      }
      return;
    }
    if (depth === 0) return;
    for (const entry of readdirSync(dir, { withFileTypes: true })) {
      if (entry.isDirectory() && entry.name !== 'node_modules') visit(join(dir, entry.name), depth - 1);
    }
  };
  visit(join(root, 'packages'), 2);
  return found;
}

/** The package's test files that import from its dist/ (`../dist/…`, `../../dist/…`). */
function readingDist(dir) {
  const tests = join(dir, 'test');
  if (!existsSync(tests)) return [];
  return readdirSync(tests, { withFileTypes: true, recursive: true })
    .filter((entry) => entry.isFile() && entry.name.endsWith('.ts'))
    .map((entry) => join(entry.parentPath ?? entry.path, entry.name))
    .filter((file) => /(?:from\s*|import\s*\(\s*)['"`](?:\.\.\/)+dist\//.test(readFileSync(file, 'utf8')));
}

mkdirSync(cache, { recursive: true });
const jobs = typechecks().map(({ dir, config }) => {
  const name = relative(root, config);
  const wrapper = join(cache, `${name.replaceAll('/', '__')}.json`);
  const compilerOptions = { paths, noEmit: true, incremental: true, tsBuildInfoFile: wrapper.replace(/\.json$/, '.tsbuildinfo') };
  // `files` adds to the extended config's `include`, which still applies relative to that config.
  writeFileSync(wrapper, JSON.stringify({ extends: config, compilerOptions, files: ambient }, null, 2));
  return { name, dir, wrapper, skipped: new Set(readingDist(dir)) };
});

/**
 * tsc's diagnostics (one per line with --pretty false, continued on indented lines), without those in other packages'
 * files and in `skipped` ones.
 */
function ownDiagnostics(output, dir, skipped) {
  const kept = [];
  let keep = true;
  for (const line of output.split('\n')) {
    const file = /^(\S[^(]*)\(\d+,\d+\): /.exec(line)?.[1];
    if (file !== undefined) {
      const path = isAbsolute(file) ? file : resolve(dir, file);
      keep = !relative(dir, path).startsWith('..') && !skipped.has(path);
    } else if (!/^\s/.test(line)) keep = true;
    if (keep && line.trim() !== '') kept.push(line);
  }
  return kept;
}

const results = [];
let next = 0;
const run = async () => {
  while (next < jobs.length) {
    const job = jobs[next++];
    const started = Date.now();
    const output = [];
    const status = await new Promise((done) => {
      const child = spawn(process.execPath, [tsc, '--noEmit', '-p', job.wrapper, '--pretty', 'false'], { cwd: job.dir });
      child.stdout.on('data', (chunk) => output.push(chunk));
      child.stderr.on('data', (chunk) => output.push(chunk));
      child.on('close', (code) => done(code));
    });
    const seconds = ((Date.now() - started) / 1000).toFixed(1);
    const own = status === 0 ? [] : ownDiagnostics(Buffer.concat(output).toString(), job.dir, job.skipped);
    const failed = own.length > 0;
    console.log(`${failed ? 'FAILED' : 'ok    '} ${job.name} (${seconds} s)`);
    if (failed) console.log(own.join('\n'));
    results.push(failed ? 1 : 0);
  }
};
await Promise.all(Array.from({ length: Math.min(2, availableParallelism()) }, run));
const failed = results.filter((status) => status !== 0).length;
if (failed > 0) {
  console.error(`typecheck-sources: ${failed} of ${jobs.length} tsconfig(s) failed`);
  process.exit(1);
}
console.log(`typecheck-sources: ${jobs.length} tsconfig(s) clean against the sources`);
