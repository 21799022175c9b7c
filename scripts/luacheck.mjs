#!/usr/bin/env node
// `pnpm lint`'s Lua half: runs luacheck (config: .luacheckrc) on the Redis script, the Redis Function library and
// the lease, config, analytics and deny list scripts as they ship, assembled from packages/stores/redis-script/src/lua by its
// build step, with their locals under the names the files give them (what ships has them shortened, the same
// code: redis-script's lua.test.ts compares the two with luac), and reports each warning at its line in the .lua
// file it came from. Every .lua file there must be part of what ships
// (an orphan file would go unlinted). Exits 1 on any warning, and loudly when luacheck is missing.
// Usage: node scripts/luacheck.mjs [lua-dir]   (the directory argument is for tests)
import { spawnSync } from 'node:child_process';
import { readdirSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { assemble, LUA_DIR } from '../packages/stores/redis-script/build/lua.mjs';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const dir = resolve(process.argv[2] ?? LUA_DIR);
const shown = (file) => relative(root, join(dir, file));

const version = spawnSync('luacheck', ['--version'], { encoding: 'utf8' });
if (version.error !== undefined || version.status !== 0) {
  console.error(
    'luacheck: the luacheck binary is missing, so the Lua cannot be linted. Install it with\n' +
      '  sh scripts/install-luacheck.sh\n' +
      '(what pnpm test and pnpm test:fast run first; on Debian/Ubuntu it is `apt-get install -y lua-check`).',
  );
  process.exit(1);
}

let assembled;
try {
  assembled = assemble(dir);
} catch (error) {
  console.error(`luacheck: the Lua does not assemble: ${error instanceof Error ? error.message : String(error)}`);
  process.exit(1);
}

const problems = [];
const used = new Set();
for (const [name, text, map] of [
  ['script.lua', assembled.readable.script, assembled.maps.script],
  ['library.lua', assembled.readable.library, assembled.maps.library],
  ['lease.lua', assembled.readable.lease, assembled.maps.lease],
  ['config.lua', assembled.readable.config, assembled.maps.config],
  ['analytics.lua', assembled.readable.analytics, assembled.maps.analytics],
  ['analytics-read.lua', assembled.readable.analyticsRead, assembled.maps.analyticsRead],
  ['deny-change.lua', assembled.readable.denyChange, assembled.maps.denyChange],
  ['deny-read.lua', assembled.readable.denyRead, assembled.maps.denyRead],
]) {
  for (const { file } of map) used.add(file);
  const run = spawnSync(
    'luacheck',
    ['--config', join(root, '.luacheckrc'), '--formatter', 'plain', '--codes', '--no-color', '--filename', name, '-'],
    {
      input: text,
      encoding: 'utf8',
    },
  );
  if (run.error !== undefined) throw run.error;
  for (const line of run.stdout.split('\n')) {
    const match = /^[^:]*:(\d+):(\d+): (.*)$/.exec(line);
    if (match === null) continue;
    const from = map[Number(match[1]) - 1];
    const where = from === undefined ? `${name} (assembled) line ${match[1]}` : `${shown(from.file)}:${from.line}:${match[2]}`;
    problems.push(`${where}: ${match[3]}   [in ${name} as assembled]`);
  }
  if (run.status !== 0 && !problems.some((p) => p.endsWith(`[in ${name} as assembled]`))) {
    problems.push(`luacheck failed on ${name} (exit ${run.status}): ${run.stderr.trim() || run.stdout.trim()}`);
  }
}

const files = [
  ...readdirSync(dir).filter((f) => f.endsWith('.lua')),
  ...readdirSync(join(dir, 'steps'))
    .filter((f) => f.endsWith('.lua'))
    .map((f) => `steps/${f}`),
];
for (const file of files)
  if (!used.has(file)) problems.push(`${shown(file)}: not part of the script or the library (no #include reaches it)`);

// The same warning may come from both texts (they share prelude, steps and driver): report it once.
const unique = [...new Set(problems.map((p) => p.replace(/ {3}\[in .*\]$/, '')))];
if (unique.length > 0) {
  for (const problem of unique) console.error(problem);
  console.error(`luacheck: ${unique.length} problem(s) in ${relative(root, dir)}`);
  process.exit(1);
}
console.log(
  `luacheck: ${files.length} files clean (${version.stdout.split('\n')[0]}; script ${assembled.sha1.slice(0, 12)}, its Function library, lease script ${assembled.leaseSha1.slice(0, 12)}, config, analytics and deny list scripts)`,
);
