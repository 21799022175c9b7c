// Proves that `check:package` can fail: it runs test/scripts/check-package.mjs on small hand-made packages in
// temp dirs, one correct and several each broken in one way that publint, attw or the layout rules must catch.
import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';

const script = resolve(dirname(fileURLToPath(import.meta.url)), '../scripts/check-package.mjs');
const made: string[] = [];

afterAll(() => {
  for (const dir of made) rmSync(dir, { recursive: true, force: true });
});

type Manifest = Record<string, unknown>;

function goodManifest(): Manifest {
  return {
    name: 'sluice-fixture',
    version: '1.0.0',
    license: 'MIT',
    repository: { type: 'git', url: 'git+https://github.com/sluice-dev/sluice.git', directory: 'packages/fixture' },
    homepage: 'https://github.com/sluice-dev/sluice/tree/main/packages/fixture#readme',
    bugs: { url: 'https://github.com/sluice-dev/sluice/issues' },
    engines: { node: '>=20' },
    type: 'module',
    sideEffects: false,
    files: ['dist'],
    main: './dist/index.cjs',
    module: './dist/index.js',
    types: './dist/index.d.ts',
    exports: {
      '.': {
        import: { types: './dist/index.d.ts', default: './dist/index.js' },
        require: { types: './dist/index.d.cts', default: './dist/index.cjs' },
      },
      './package.json': './package.json',
    },
  };
}

function check(manifest: Manifest, options: { readme?: boolean; license?: boolean } = {}): { status: number | null; output: string } {
  const dir = mkdtempSync(join(tmpdir(), 'sluice-fixture-'));
  made.push(dir);
  mkdirSync(join(dir, 'dist'));
  writeFileSync(join(dir, 'package.json'), JSON.stringify(manifest, null, 2));
  writeFileSync(join(dir, 'dist/index.js'), 'export const answer = 42;\n');
  writeFileSync(join(dir, 'dist/index.cjs'), "'use strict';\nexports.answer = 42;\n");
  writeFileSync(join(dir, 'dist/index.d.ts'), 'export declare const answer: number;\n');
  writeFileSync(join(dir, 'dist/index.d.cts'), 'export declare const answer: number;\n');
  if (options.readme !== false) writeFileSync(join(dir, 'README.md'), '# fixture\n');
  if (options.license !== false) writeFileSync(join(dir, 'LICENSE'), 'MIT License\n');
  const result = spawnSync(process.execPath, [script], { cwd: dir, encoding: 'utf8', timeout: 60_000 });
  return { status: result.status, output: `${result.stdout}\n${result.stderr}` };
}

describe('check-package.mjs', () => {
  it('passes a correct dual ESM/CJS package', () => {
    const { status, output } = check(goodManifest());
    expect(output).toContain('sluice-fixture@1.0.0 ok');
    expect(status).toBe(0);
  });

  it('passes a package declared ESM only (no import/require conditions), checked with the esm-only profile', () => {
    const manifest = {
      ...goodManifest(),
      main: './dist/index.js',
      exports: { '.': { types: './dist/index.d.ts', default: './dist/index.js' } },
    };
    const { status, output } = check(manifest);
    expect(output).toContain('sluice-fixture@1.0.0 ok (publint strict, attw esm-only, layout)');
    expect(status).toBe(0);
  });

  it('fails when CJS consumers would get ESM types (attw: masquerading as ESM; publint error)', () => {
    const manifest = goodManifest();
    manifest.exports = {
      '.': {
        import: { types: './dist/index.d.ts', default: './dist/index.js' },
        require: { types: './dist/index.d.ts', default: './dist/index.cjs' },
      },
    };
    const { status, output } = check(manifest);
    expect(status).toBe(1);
    expect(output).toContain('Masquerading as ESM');
    expect(output).toContain('@arethetypeswrong/cli found type resolution problems');
  });

  it('fails a tarball without LICENSE, and a manifest without repository.directory, homepage or bugs', () => {
    const { homepage: _h, bugs: _b, ...manifest } = goodManifest();
    manifest.repository = { type: 'git', url: 'git+https://github.com/sluice-dev/sluice.git' };
    const { status, output } = check(manifest, { license: false });
    expect(status).toBe(1);
    expect(output).toContain('LICENSE is missing from the tarball');
    expect(output).toContain('"repository.directory" is missing');
    expect(output).toContain('"homepage" must be an https URL');
    expect(output).toContain('"bugs.url" must be an https URL');
  });

  it('fails on a publint warning (strict mode), here an invalid repository value', () => {
    const manifest = { ...goodManifest(), repository: 'https://example.com/sluice.git' };
    const { status, output } = check(manifest);
    expect(status).toBe(1);
    expect(output).toContain('publint (strict) reported errors or warnings');
  });

  it('fails on layout: "types" not first, no sideEffects: false, no engines.node, no README', () => {
    const { sideEffects: _s, engines: _e, ...manifest } = goodManifest();
    manifest.exports = {
      '.': {
        import: { default: './dist/index.js', types: './dist/index.d.ts' },
        require: { types: './dist/index.d.cts', default: './dist/index.cjs' },
      },
    };
    const { status, output } = check(manifest, { readme: false });
    expect(status).toBe(1);
    expect(output).toContain('exports["."].import: "types" must come first');
    expect(output).toContain('"sideEffects" must be false');
    expect(output).toContain('"engines.node" is missing');
    expect(output).toContain('README.md is missing');
  });
});
