#!/usr/bin/env node
// Checks what a user would install, not the source tree: packs the package in the current directory with
// `pnpm pack` (which rewrites workspace:^ to real ranges, as publishing does), then lints the tarball with
// publint (strict: warnings fail) and @arethetypeswrong/cli (profile "strict": node10, node16 from CJS,
// node16 from ESM and bundler resolution must all find correct types), plus the layout every sluice package
// promises (ESM + CJS, types first, sideEffects false, only dist/ shipped besides README and LICENSE; repository,
// homepage and bugs set). Exits 1 on any problem.
// A package whose "." export is a plain { types, default } with no import/require conditions is ESM only and is
// checked with attw's "esm-only" profile instead (node16 from CJS and node10 are then not expected to resolve).
// Usage: from a package directory, `node <root>/test/scripts/check-package.mjs` (its `check:package` script).
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, existsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, relative, resolve, sep } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '../..');
const bin = (name) => join(root, 'node_modules', '.bin', name);
const pkgDir = process.cwd();
const problems = [];

function run(command, args, options = {}) {
  const result = spawnSync(command, args, { cwd: pkgDir, encoding: 'utf8', ...options });
  if (result.error) throw new Error(`could not run ${command}: ${result.error.message}`);
  return result;
}

const manifestPath = join(pkgDir, 'package.json');
if (!existsSync(manifestPath)) {
  console.error(`check-package: no package.json in ${pkgDir}; run it from a package directory`);
  process.exit(1);
}
const manifest = JSON.parse(readFileSync(manifestPath, 'utf8'));
const label = `${manifest.name}@${manifest.version}`;
// Every package ships ESM and CJS unless its "." export has no "require" condition at all (declared ESM only).
const rootExport = manifest.exports?.['.'];
const esmOnly = typeof rootExport === 'object' && rootExport !== null && !('require' in rootExport) && !('import' in rootExport);

const scratch = mkdtempSync(join(tmpdir(), 'sluice-check-package-'));
try {
  const packed = run('pnpm', ['pack', '--pack-destination', scratch, '--json']);
  if (packed.status !== 0) {
    console.error(packed.stdout, packed.stderr);
    throw new Error(`pnpm pack failed in ${pkgDir} (exit ${packed.status})`);
  }
  const { filename, files } = JSON.parse(packed.stdout.slice(packed.stdout.indexOf('{')));
  const shipped = files.map((f) => f.path);

  checkLayout(manifest, shipped);
  const packedManifest = JSON.parse(run('tar', ['-xzOf', filename, 'package/package.json']).stdout);
  for (const field of ['dependencies', 'peerDependencies', 'optionalDependencies']) {
    for (const [name, range] of Object.entries(packedManifest[field] ?? {})) {
      if (String(range).startsWith('workspace:')) problems.push(`${field}.${name} is still "${range}" in the tarball`);
    }
  }

  const publint = run(bin('publint'), ['run', filename, '--strict', '--level', 'suggestion', '--pack', 'false']);
  process.stdout.write(publint.stdout);
  process.stderr.write(publint.stderr);
  if (publint.status !== 0) problems.push(`publint (strict) reported errors or warnings (exit ${publint.status})`);

  const attw = run(bin('attw'), [
    filename,
    '--profile',
    esmOnly ? 'esm-only' : 'strict',
    '--format',
    'table-flipped',
    '--no-emoji',
    '--no-color',
  ]);
  process.stdout.write(attw.stdout);
  process.stderr.write(attw.stderr);
  if (attw.status !== 0) problems.push(`@arethetypeswrong/cli found type resolution problems (exit ${attw.status})`);
} finally {
  rmSync(scratch, { recursive: true, force: true });
}

if (problems.length > 0) {
  console.error(`\ncheck-package: ${label} FAILED`);
  for (const p of problems) console.error(`  - ${p}`);
  process.exit(1);
}
console.log(`check-package: ${label} ok (publint strict, attw ${esmOnly ? 'esm-only' : 'strict'}, layout)`);

/** The promises every sluice package makes about its manifest and tarball. */
function checkLayout(pkg, shippedFiles) {
  if (pkg.private === true) problems.push('package is private; check:package is for published packages');
  if (pkg.type !== 'module') problems.push('"type" must be "module" (ESM .js, CJS .cjs)');
  if (pkg.sideEffects !== false) problems.push('"sideEffects" must be false so bundlers can tree-shake');
  if (JSON.stringify(pkg.files) !== JSON.stringify(['dist'])) problems.push('"files" must be ["dist"]');
  if (pkg.license === undefined) problems.push('"license" is missing');
  if (pkg.engines?.node === undefined) problems.push('"engines.node" is missing');
  const root = pkg.exports?.['.'];
  if (typeof root !== 'object' || root === null) {
    problems.push('"exports" must have a "." entry with import and require conditions');
    return;
  }
  const conditions = esmOnly ? [] : ['import', 'require'];
  if (esmOnly) {
    // ESM only (no "require" condition): allowed for packages whose own peers cannot be required (vitest).
    const keys = Object.keys(root);
    if (keys[0] !== 'types') problems.push(`exports["."]: "types" must come first, got ${keys.join(', ')}`);
    if (typeof root.default !== 'string' || !root.default.endsWith('.js')) problems.push('exports["."].default must be a .js file');
  }
  for (const condition of conditions) {
    const entry = root[condition];
    if (typeof entry !== 'object' || entry === null) {
      problems.push(`exports["."].${condition} must be an object { types, default }`);
      continue;
    }
    const keys = Object.keys(entry);
    if (keys[0] !== 'types') problems.push(`exports["."].${condition}: "types" must come first, got ${keys.join(', ')}`);
    if (typeof entry.default !== 'string') problems.push(`exports["."].${condition}.default is missing`);
  }
  const expectCjs = root.require?.default;
  if (typeof expectCjs === 'string' && !expectCjs.endsWith('.cjs')) problems.push('exports["."].require.default must be a .cjs file');
  const allowed = /^(dist\/.+|package\.json|README\.md|LICENSE(\.md)?|CHANGELOG\.md)$/;
  for (const file of shippedFiles) if (!allowed.test(file)) problems.push(`unexpected file in tarball: ${file}`);
  if (!shippedFiles.includes('README.md')) problems.push('README.md is missing from the tarball (each package documents itself)');
  if (!shippedFiles.includes('LICENSE'))
    problems.push('LICENSE is missing from the tarball (copy the root LICENSE into the package directory)');
  checkLinks(pkg);
}

/** Where the package came from, for the npm website's sidebar: repository (with its directory), homepage, bugs. */
function checkLinks(pkg) {
  const repository = pkg.repository;
  if (typeof repository !== 'object' || repository === null || typeof repository.url !== 'string') {
    problems.push('"repository" must be an object { type, url, directory }');
  } else {
    const inRepo = relative(root, pkgDir).split(sep).join('/');
    if (typeof repository.directory !== 'string')
      problems.push('"repository.directory" is missing (the package\'s folder in the repository)');
    else if (!inRepo.startsWith('..') && repository.directory !== inRepo)
      problems.push(`"repository.directory" is "${repository.directory}", expected "${inRepo}"`);
  }
  if (typeof pkg.homepage !== 'string' || !pkg.homepage.startsWith('https://')) problems.push('"homepage" must be an https URL');
  if (typeof pkg.bugs?.url !== 'string' || !pkg.bugs.url.startsWith('https://')) problems.push('"bugs.url" must be an https URL');
}
