// Preloaded (NODE_OPTIONS=--require=<this file>) by scripts/test-node-versions.mjs into the test processes of the
// packages that load better-sqlite3, on Node 22 and 24, and so into every node process they start that inherits
// NODE_OPTIONS. Whatever resolves to a file of the better-sqlite3 package in node_modules (whose native addon
// `pnpm install` built for the machine's Node, 20) resolves instead to the same file in the copy built for this
// Node by scripts/node-versions/build-better-sqlite3.mjs: .tools/better-sqlite3-node-<major>/node_modules.
// module.registerHooks (synchronous, in-thread; Node 22.15+) covers require() and import, also of paths already
// resolved elsewhere (vitest resolves some bare specifiers itself). require.resolve() runs through those hooks
// from Node 24 on only, so Module._resolveFilename is wrapped too: packages/stores/sqlite's failures test lays
// out a copy of better-sqlite3 found with require.resolve for a child that gets no NODE_OPTIONS.
// Refuses loudly when the copy is missing or of another better-sqlite3 version than node_modules holds.
'use strict';
const { existsSync, readFileSync, realpathSync } = require('node:fs');
const Module = require('node:module');
const { dirname, isAbsolute, join, relative } = require('node:path');
const { fileURLToPath, pathToFileURL } = require('node:url');

const major = process.versions.node.split('.')[0];
const copy = join(__dirname, '..', '..', '.tools', `better-sqlite3-node-${major}`, 'node_modules', 'better-sqlite3');
const refuse = (message) => {
  throw new Error(
    `better-sqlite3-redirect (Node ${process.versions.node}): ${message}. Build it with\n  sh scripts/install-node-versions.sh`,
  );
};
if (typeof Module.registerHooks !== 'function') refuse('module.registerHooks is missing (Node 22.15 or later needed)');
if (!existsSync(join(copy, 'build', 'Release', 'better_sqlite3.node'))) refuse(`${copy} has no built addon`);
const realCopy = realpathSync(copy);
const copyVersion = JSON.parse(readFileSync(join(realCopy, 'package.json'), 'utf8')).version;

/** The better-sqlite3 package folder holding `file`, or undefined. */
function packageRoot(file) {
  for (let dir = dirname(file); dir !== dirname(dir) && dir.includes('better-sqlite3'); dir = dirname(dir)) {
    const manifest = join(dir, 'package.json');
    if (existsSync(manifest)) return JSON.parse(readFileSync(manifest, 'utf8')).name === 'better-sqlite3' ? dir : undefined;
  }
  return undefined;
}

const checked = new Set(); // package folders already compared with the copy
/** `path` itself, or the same file in the copy when `path` is inside another better-sqlite3 package. */
function redirect(path) {
  if (!path.includes('better-sqlite3') || !isAbsolute(path) || !existsSync(path)) return path;
  const file = realpathSync(path);
  const from = packageRoot(file);
  if (from === undefined || from === realCopy) return path;
  if (!checked.has(from)) {
    const version = JSON.parse(readFileSync(join(from, 'package.json'), 'utf8')).version;
    if (version !== copyVersion)
      refuse(`node_modules has better-sqlite3 ${version} (${from}), the copy for Node ${major} is ${copyVersion}`);
    checked.add(from);
  }
  return join(realCopy, relative(from, file));
}

Module.registerHooks({
  resolve(specifier, context, nextResolve) {
    const result = nextResolve(specifier, context);
    if (!result.url.startsWith('file:') || !result.url.includes('better-sqlite3')) return result;
    const path = fileURLToPath(result.url);
    const to = redirect(path);
    return to === path ? result : { ...result, url: pathToFileURL(to).href };
  },
});
const resolveFilename = Module._resolveFilename;
Module._resolveFilename = function (...args) {
  return redirect(resolveFilename.apply(this, args));
};
