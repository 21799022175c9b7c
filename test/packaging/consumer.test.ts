// What a user installs must work. Packs the publishable packages with `pnpm pack` (as publishing would), installs
// the tarballs into a fresh npm project in a temp dir (third-party dependencies such as lru-cache come from the
// npm registry), then runs the README's quickstart there as ESM and as CommonJS and compares its output with the
// output the README shows. It also typechecks the quickstart against the installed types in both module systems
// and checks that every package exports the same names from import and require.
import { execFile, spawnSync, type SpawnSyncOptions } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { fencedBlockAfter, fencedBlockAfterLine, toCommonJs } from './readme.js';
import { publishedPackages, readJson, root, type Manifest } from './workspace.js';
import { startRedis, type RedisServer } from '../harness/redis.js';
import { startUpstashFixture, type UpstashFixture } from '../harness/upstash-fixture.js';

const REQUIRED = ['@sluice/core', '@sluice/memory', '@sluice/conformance'];
/** Peers small enough to install for the export-parity check; packages needing others are only resolved. */
const INSTALLABLE_PEERS = ['vitest', 'ioredis', '@upstash/redis'];
const INSTALL_TIMEOUT_MS = 150_000;

/** Declared ESM only: the "." export is a plain { types, default } (see test/scripts/check-package.mjs). */
function isEsmOnly(manifest: Manifest): boolean {
  const root = manifest.exports?.['.'];
  return typeof root === 'object' && root !== null && !('require' in root) && !('import' in root);
}

/** A clean environment for npm and node: nothing inherited from the pnpm/turbo/vitest process that runs us. */
function cleanEnv(): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  for (const [key, value] of Object.entries(process.env)) {
    if (/^(npm_|pnpm_|NODE_OPTIONS$|VITEST|TURBO_)/i.test(key)) continue;
    env[key] = value;
  }
  return env;
}

function run(command: string, args: string[], options: SpawnSyncOptions & { timeout: number }) {
  const result = spawnSync(command, args, { encoding: 'utf8', env: cleanEnv(), ...options });
  if (result.error) throw new Error(`${command} ${args.join(' ')} could not run or timed out: ${result.error.message}`);
  const stdout = String(result.stdout);
  const stderr = String(result.stderr);
  return { status: result.status, stdout, stderr, output: `${stdout}\n${stderr}` };
}

/** Every publishable package, and whether @sluice/suites depends on it. */
function publishablePackages(): { dir: string; manifest: Manifest; covered: boolean }[] {
  const wanted = new Set(Object.keys(readJson(join(root, 'test/package.json')).devDependencies ?? {}));
  return publishedPackages().map((p) => ({ ...p, covered: wanted.has(p.manifest.name) }));
}

const readme = readFileSync(join(root, 'README.md'), 'utf8');
const quickstart = fencedBlockAfter(readme, 'quickstart');
const quickstartCjs = fencedBlockAfter(readme, 'quickstart-cjs');
const expectedOutput = fencedBlockAfter(readme, 'quickstart-output');

/**
 * The README's "install from this repository" block: the packages it builds and packs, and the tarball files it
 * installs. Its lines must keep the shape this test runs.
 */
function installFromRepository(): { lines: string[]; filters: string[]; tarballs: string[] } {
  const block = fencedBlockAfter(readme, 'install-from-repository');
  if (block === undefined) throw new Error('README.md needs a ```sh block after <!-- install-from-repository -->');
  const lines = block.trim().split('\n');
  const filtersOf = (line: string | undefined, command: string): string[] => {
    const match = new RegExp(`^(?:pnpm install && )?pnpm((?: --filter @sluice/[a-z]+)+) ${command}$`).exec(line ?? '');
    if (match === null) throw new Error(`README install-from-repository: unexpected line ${JSON.stringify(line)}`);
    return match[1]!
      .trim()
      .split(/\s+/)
      .filter((word) => word !== '--filter');
  };
  const filters = filtersOf(lines[2], 'pack --pack-destination \\./tarballs');
  expect(filtersOf(lines[1], 'build'), 'README: build the packages it packs').toEqual(filters);
  const tarballs = [...(lines[3] ?? '').matchAll(/\S+\/tarballs\/(\S+\.tgz)/g)].map((match) => match[1]!);
  return { lines, filters, tarballs };
}

let scratch = '';
let app = '';
let packages: { dir: string; manifest: Manifest }[] = [];

beforeAll(() => {
  // Only packages @sluice/suites depends on: turbo has built those before this suite runs.
  packages = publishablePackages().filter((p) => p.covered);
  scratch = mkdtempSync(join(tmpdir(), 'sluice-consumer-'));
  const tarballs = join(scratch, 'tarballs');
  app = join(scratch, 'app');
  mkdirSync(tarballs);
  mkdirSync(app);
  for (const { dir, manifest } of packages) {
    if (!existsSync(join(dir, 'dist'))) throw new Error(`${manifest.name} has no dist/; build it first (pnpm build)`);
  }
  // The README's pack command as written, from the repository root (its ./tarballs here a temp dir), then the same
  // command for every other package this suite installs.
  const readmeFilters = installFromRepository().filters;
  const others = packages.map((p) => p.manifest.name).filter((name) => !readmeFilters.includes(name));
  for (const names of [readmeFilters, others]) {
    const args = [...names.flatMap((name) => ['--filter', name]), 'pack', '--pack-destination', tarballs];
    const packed = run('pnpm', args, { cwd: root, timeout: 120_000 });
    if (packed.status !== 0) throw new Error(`pnpm ${args.join(' ')} failed:\n${packed.output}`);
  }
  const files = readdirSync(tarballs).map((file) => join(tarballs, file));
  const peers = new Set<string>();
  for (const { manifest } of packages) {
    for (const [peer, range] of Object.entries(manifest.peerDependencies ?? {})) {
      if (INSTALLABLE_PEERS.includes(peer)) peers.add(`${peer}@${range}`);
    }
  }
  writeFileSync(join(app, 'package.json'), JSON.stringify({ name: 'sluice-consumer', version: '1.0.0', private: true }, null, 2));
  // --omit=peer: a user installs the peers they use; we install only the ones named above, explicitly.
  const install = run(
    'npm',
    ['install', ...files, ...peers, '--prefer-offline', '--no-audit', '--no-fund', '--omit=peer', '--loglevel=error'],
    { cwd: app, timeout: INSTALL_TIMEOUT_MS },
  );
  if (install.status !== 0) throw new Error(`npm install of the tarballs failed:\n${install.output}`);
}, INSTALL_TIMEOUT_MS + 90_000);

afterAll(() => {
  if (scratch !== '') rmSync(scratch, { recursive: true, force: true });
});

describe('consumer install from packed tarballs', () => {
  it('covers every publishable package (each must be a devDependency of @sluice/suites so turbo builds it first)', () => {
    const names = packages.map((p) => p.manifest.name);
    for (const name of REQUIRED) expect(names).toContain(name);
    const missing = publishablePackages()
      .filter((p) => !p.covered)
      .map((p) => p.manifest.name);
    expect(missing, 'add these to test/package.json devDependencies as "workspace:^"').toEqual([]);
  });

  it('installs one copy of each package, at the packed version, from the tarball', () => {
    for (const { manifest } of packages) {
      const installed = readJson(join(app, 'node_modules', manifest.name, 'package.json'));
      expect(installed.version).toBe(manifest.version);
    }
    const nested = run('find', ['node_modules', '-mindepth', '2', '-path', '*/node_modules/@sluice/*', '-name', 'package.json'], {
      cwd: app,
      timeout: 10_000,
    });
    expect(nested.stdout.split('\n').filter((line) => line.split('node_modules').length > 2)).toEqual([]);
    const lock = readFileSync(join(app, 'package-lock.json'), 'utf8');
    expect(lock).toContain('"node_modules/lru-cache"');
  });

  it('the README says how to install from this repository, and its commands are the ones run here', () => {
    const { lines, filters, tarballs } = installFromRepository();
    const repository = readJson(join(root, 'packages/core/package.json')).repository?.url?.replace(/^git\+/, '');
    expect(lines[0]).toBe(`git clone ${repository} && cd sluice`);
    expect(filters.sort()).toEqual(['@sluice/core', '@sluice/memory']);
    // The tarballs the README installs are the ones its pack command made, by name and version.
    const made = readdirSync(join(scratch, 'tarballs'));
    const expected = packages
      .filter((p) => filters.includes(p.manifest.name))
      .map((p) => `${p.manifest.name.replace('@', '').replace('/', '-')}-${p.manifest.version}.tgz`);
    expect(tarballs.sort()).toEqual(expected.sort());
    for (const file of tarballs) expect(made).toContain(file);
    // Every tarball follows the naming the README gives: sluice-<package>-<version>.tgz.
    expect(made.sort()).toEqual(packages.map((p) => `sluice-${p.manifest.name.split('/')[1]}-${p.manifest.version}.tgz`).sort());
    expect(lines).toHaveLength(4);
  });

  it('has a quickstart and its expected output in the README', () => {
    expect(quickstart, 'README.md needs a ```js block after <!-- quickstart -->').toBeDefined();
    expect(expectedOutput, 'README.md needs a ```text block after <!-- quickstart-output -->').toBeDefined();
  });

  it('runs the README quickstart as ESM (.mjs) and prints what the README says', () => {
    writeFileSync(join(app, 'quickstart.mjs'), quickstart!);
    const result = run(process.execPath, ['quickstart.mjs'], { cwd: app, timeout: 20_000 });
    expect(result.stderr).toBe('');
    expect(result.status).toBe(0);
    expect(result.stdout).toBe(expectedOutput);
  });

  it('runs the README quickstart as CommonJS (.cjs) and prints the same', () => {
    const source = quickstartCjs ?? toCommonJs(quickstart!);
    // Record which files require() loaded, to prove the CommonJS builds ran (not the ESM ones).
    const probe = "\nprocess.on('exit', () => process.stderr.write(JSON.stringify(Object.keys(require.cache))));\n";
    writeFileSync(join(app, 'quickstart.cjs'), source);
    writeFileSync(join(app, 'quickstart-probe.cjs'), source + probe);
    const result = run(process.execPath, ['quickstart-probe.cjs'], { cwd: app, timeout: 20_000 });
    expect(result.status).toBe(0);
    expect(result.stdout).toBe(expectedOutput);
    const loaded = JSON.parse(result.stderr) as string[];
    expect(loaded).toContain(join(app, 'node_modules/@sluice/core/dist/index.cjs'));
    expect(loaded).toContain(join(app, 'node_modules/@sluice/memory/dist/index.cjs'));
  });

  it('typechecks the quickstart against the installed types, as ESM and as CommonJS', () => {
    const tsc = join(root, 'node_modules/typescript/bin/tsc');
    const args = [
      tsc,
      '--noEmit',
      '--allowJs',
      '--checkJs',
      '--strict',
      '--skipLibCheck',
      'false',
      '--module',
      'node16',
      '--moduleResolution',
      'node16',
      '--target',
      'es2022',
      '--lib',
      'es2022',
      '--typeRoots',
      join(root, 'node_modules/@types'),
      '--types',
      'node',
      'quickstart.mjs',
      'quickstart.cjs',
    ];
    const result = run(process.execPath, args, { cwd: app, timeout: 60_000 });
    expect(result.output.trim()).toBe('');
    expect(result.status).toBe(0);
  });

  it('exports the same names from import and require, from dist/index.js and dist/index.cjs', () => {
    // Packages whose required peers are not installed here can only be resolved, not loaded.
    const loadable = packages.filter(({ manifest }) =>
      Object.keys(manifest.peerDependencies ?? {}).every(
        (peer) => manifest.peerDependenciesMeta?.[peer]?.optional === true || existsSync(join(app, 'node_modules', peer)),
      ),
    );
    expect(loadable.map((p) => p.manifest.name)).toEqual(expect.arrayContaining(REQUIRED));
    // import.meta.resolve exists only in ESM, so the CommonJS probe asks a one-line ESM helper.
    writeFileSync(join(app, 'resolve-esm.mjs'), 'export const resolveEsm = (name) => import.meta.resolve(name);\n');
    writeFileSync(
      join(app, 'parity.cjs'),
      `const { fileURLToPath } = require('node:url');
const packages = ${JSON.stringify(loadable.map((p) => ({ name: p.manifest.name, esmOnly: isEsmOnly(p.manifest) })))};
(async () => {
  const { resolveEsm } = await import('./resolve-esm.mjs');
  const report = {};
  for (const { name, esmOnly } of packages) {
    const esm = Object.keys(await import(name)).sort();
    report[name] = {
      cjsPath: esmOnly ? null : require.resolve(name),
      esmPath: fileURLToPath(resolveEsm(name)),
      cjs: esmOnly ? esm : Object.keys(require(name)).sort(),
      esm,
    };
  }
  process.stdout.write(JSON.stringify(report));
})().catch((error) => {
  console.error(error);
  process.exitCode = 1;
});
`,
    );
    const result = run(process.execPath, ['parity.cjs'], { cwd: app, timeout: 30_000 });
    expect(result.stderr).toBe('');
    expect(result.status).toBe(0);
    const report = JSON.parse(result.stdout) as Record<string, { cjsPath: string | null; esmPath: string; cjs: string[]; esm: string[] }>;
    for (const { manifest } of loadable) {
      const entry = report[manifest.name]!;
      if (!isEsmOnly(manifest)) expect(entry.cjsPath).toBe(join(app, 'node_modules', manifest.name, 'dist/index.cjs'));
      expect(entry.esmPath).toBe(join(app, 'node_modules', manifest.name, 'dist/index.js'));
      expect(entry.cjs, `${manifest.name}: require() and import expose different names`).toEqual(entry.esm);
    }
    expect(report['@sluice/core']!.esm).toEqual(expect.arrayContaining(['createLimiter', 'tokenBucket', 'SluiceError']));
    expect(report['@sluice/memory']!.esm).toEqual(expect.arrayContaining(['memoryStore']));
  });

  it("runs @sluice/conformance's README example (the memory store adopting the suite) with vitest", () => {
    const conformanceReadme = readFileSync(join(root, 'packages/conformance/README.md'), 'utf8');
    const example = fencedBlockAfterLine(conformanceReadme, '## Adopt it');
    expect(example, 'packages/conformance/README.md needs a code block right after "## Adopt it"').toBeDefined();
    writeFileSync(join(app, 'conformance.test.ts'), example!);
    const vitest = join(app, 'node_modules/vitest/vitest.mjs');
    const result = run(process.execPath, [vitest, 'run', 'conformance.test.ts', '--reporter=json', '--outputFile=conformance.json'], {
      cwd: app,
      timeout: 150_000,
    });
    expect(result.status, result.output).toBe(0);
    const report = JSON.parse(readFileSync(join(app, 'conformance.json'), 'utf8')) as {
      numTotalTests: number;
      numPassedTests: number;
      numPendingTests: number;
      testResults: { assertionResults: { title: string; status: string }[] }[];
    };
    // The README's totals: 127 tests for a synchronous client-clock store with take, reserve and leases, of which the 12 that read
    // keys are skipped without inspectKeys.
    expect([report.numTotalTests, report.numPassedTests, report.numPendingTests]).toEqual([127, 115, 12]);
    const skipped = report.testResults.flatMap((file) => file.assertionResults).filter((a) => a.status !== 'passed');
    expect(skipped.every((a) => a.status === 'skipped' && a.title.endsWith('(needs inspectKeys)'))).toBe(true);
  }, 180_000);
});

describe('@sluice/upstash without @upstash/redis (its own REST client), installed from the tarballs', () => {
  let redis: RedisServer | undefined;
  let fixture: UpstashFixture | undefined;

  afterAll(async () => {
    await fixture?.close();
    await redis?.stop();
  });

  it(
    'npm installs @sluice/core and @sluice/upstash alone, and decides against the Upstash REST fixture',
    async () => {
      redis = await startRedis();
      fixture = await startUpstashFixture({ redisPort: redis.port });
      const edge = join(scratch, 'upstash-only');
      mkdirSync(edge);
      writeFileSync(
        join(edge, 'package.json'),
        JSON.stringify({ name: 'sluice-upstash-only', version: '1.0.0', private: true, type: 'module' }, null, 2),
      );
      const tarball = (name: string) =>
        join(scratch, 'tarballs', `sluice-${name}-${packages.find((p) => p.manifest.name === `@sluice/${name}`)!.manifest.version}.tgz`);
      const install = run(
        'npm',
        [
          'install',
          tarball('core'),
          tarball('redis-script'),
          tarball('upstash'),
          '--prefer-offline',
          '--no-audit',
          '--no-fund',
          '--loglevel=error',
        ],
        {
          cwd: edge,
          timeout: INSTALL_TIMEOUT_MS,
        },
      );
      expect(install.status, install.output).toBe(0);
      // npm installs required peers by itself: @upstash/redis being optional, it must not be there.
      expect(existsSync(join(edge, 'node_modules/@upstash/redis'))).toBe(false);
      writeFileSync(
        join(edge, 'limit.mjs'),
        `import { createLimiter, fixedWindow } from '@sluice/core';
import { upstashStore } from '@sluice/upstash';
const limiter = createLimiter({ store: upstashStore({ url: process.env.URL, token: process.env.TOKEN }), rules: fixedWindow({ limit: 2, window: '1h' }) });
const decisions = [];
for (let i = 0; i < 3; i++) decisions.push(await limiter.limit('consumer'));
console.log(JSON.stringify(decisions.map((d) => [d.allowed, d.remaining, d.degraded])));
`,
      );
      // Asynchronously: the fixture answers from this process's event loop, which spawnSync would block.
      const result = await new Promise<{ stdout: string; stderr: string }>((resolve, reject) =>
        execFile(
          process.execPath,
          ['limit.mjs'],
          { cwd: edge, encoding: 'utf8', timeout: 20_000, env: { ...cleanEnv(), URL: fixture!.url, TOKEN: fixture!.token } },
          (error, stdout, stderr) =>
            error === null ? resolve({ stdout, stderr }) : reject(new Error(`limit.mjs failed: ${error.message}\n${stdout}${stderr}`)),
        ),
      );
      expect(result.stderr).toBe('');
      expect(result.stdout.trim()).toBe('[[true,1,false],[true,0,false],[false,0,false]]');
      expect(fixture.stats.byCommand.evalsha).toBeGreaterThanOrEqual(3);
    },
    INSTALL_TIMEOUT_MS + 30_000,
  );
});
