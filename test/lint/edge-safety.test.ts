// Proves the edge-safety lint rules in eslint.config.js fire: the same offending source is linted, through
// ESLint's Node API and the repository's own config, as if it lived in each edge-safe package (errors expected)
// and in a Node-only package (no edge errors expected). Also checks core's built output imports nothing.
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { ESLint } from 'eslint';
import { describe, expect, it } from 'vitest';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '../..');
const eslint = new ESLint({ cwd: root });
const vitestBin = join(root, 'node_modules/vitest/vitest.mjs');

const EDGE_SAFE_FILES = [
  'packages/core/src/edge-probe.ts',
  'packages/http/src/edge-probe.ts',
  'packages/stores/memory/src/edge-probe.ts',
  'packages/stores/redis-script/src/edge-probe.ts',
  'packages/stores/upstash/src/edge-probe.ts',
  'packages/tiered/src/edge-probe.ts',
  'packages/frameworks/next/src/edge-probe.ts',
];

const OFFENDERS = {
  nodeImport: "import { readFileSync } from 'node:fs';\nexport const a = readFileSync;\n",
  bareBuiltin: "import { createHash } from 'crypto';\nexport const b = createHash;\n",
  buffer: "export const c = Buffer.from('x');\n",
  process: 'export const d = process.env.SLUICE_DEBUG;\n',
  require: "export const e = require('x');\n",
};

async function ruleHits(code: string, file: string): Promise<string[]> {
  const [result] = await eslint.lintText(code, { filePath: join(root, file) });
  return result!.messages.filter((m) => m.severity === 2).map((m) => `${m.ruleId}: ${m.message}`);
}

describe('edge-safety lint', () => {
  for (const file of EDGE_SAFE_FILES) {
    it(`rejects node:* imports, bare builtins, Buffer, bare process and require in ${file}`, async () => {
      expect(await ruleHits(OFFENDERS.nodeImport, file)).toEqual([
        expect.stringMatching(/^no-restricted-imports: .*Edge-safe packages may not import Node built-ins/),
      ]);
      expect(await ruleHits(OFFENDERS.bareBuiltin, file)).toEqual([expect.stringMatching(/^no-restricted-imports: .*Node built-ins/)]);
      expect(await ruleHits(OFFENDERS.buffer, file)).toEqual([expect.stringMatching(/^no-restricted-globals: Unexpected use of 'Buffer'/)]);
      expect(await ruleHits(OFFENDERS.process, file)).toEqual([
        expect.stringMatching(/^no-restricted-globals: Unexpected use of 'process'/),
      ]);
      expect((await ruleHits(OFFENDERS.require, file)).join('\n')).toMatch(/no-restricted-globals: Unexpected use of 'require'/);
    });
  }

  it('allows web-standard code in edge-safe packages', async () => {
    const clean = "export const f = new TextEncoder().encode('x');\nexport const g = (globalThis as { process?: unknown }).process;\n";
    expect(await ruleHits(clean, EDGE_SAFE_FILES[0]!)).toEqual([]);
  });

  it('allows edge-safe workspace packages whose names end like a built-in (regression: @sluice/http matched "http")', async () => {
    const code = "import { createHandler } from '@sluice/http';\nexport const h = createHandler;\n";
    expect(await ruleHits(code, 'packages/frameworks/next/src/edge-probe.ts')).toEqual([]);
    expect(
      await ruleHits("import { request } from 'http';\nexport const r = request;\n", 'packages/frameworks/next/src/edge-probe.ts'),
    ).toHaveLength(1);
  });

  it('does not apply edge rules to Node-only packages (SQLite and Redis stores, tests)', async () => {
    const nodeOnly = [
      'packages/stores/sqlite/src/edge-probe.ts',
      'packages/stores/redis/src/edge-probe.ts',
      'packages/core/test/edge-probe.test.ts',
    ];
    for (const file of nodeOnly) {
      const code = OFFENDERS.nodeImport + OFFENDERS.buffer + OFFENDERS.process;
      expect(await ruleHits(code, file)).toEqual([]);
    }
  });

  // The memory store is recommended for edge functions: its source is held to the edge rules and, like core's,
  // its tests run under vitest's edge-runtime environment as well as under Node.
  for (const dir of ['packages/core', 'packages/stores/memory']) {
    it(`${dir}'s tests run under edge-runtime too, every file but *.node.test.ts`, () => {
      const list = (project: string) => {
        const result = spawnSync(process.execPath, [vitestBin, 'list', '--filesOnly', '--json', '--project', project], {
          cwd: join(root, dir),
          encoding: 'utf8',
          timeout: 60_000,
        });
        expect(result.status, result.stderr).toBe(0);
        const files = (JSON.parse(result.stdout) as { file: string }[]).map((entry) => relative(join(root, dir), entry.file));
        return [...new Set(files)].sort();
      };
      // vitest's edge-runtime environment loads @edge-runtime/vm: the package declares it rather than borrow it.
      const manifest = JSON.parse(readFileSync(join(root, dir, 'package.json'), 'utf8')) as { devDependencies?: Record<string, string> };
      expect(manifest.devDependencies?.['@edge-runtime/vm']).toBeDefined();
      const onNode = list('node');
      const onEdge = list('edge-runtime');
      expect(onNode.length).toBeGreaterThan(3);
      expect(onEdge).toEqual(onNode.filter((file) => !file.endsWith('.node.test.ts')));
    });
  }

  it("core's built ESM and CJS import nothing but their own chunks (zero dependencies, no Node built-ins)", () => {
    // Every entry package.json exports (the root, `/store`, `/concurrency`, ...) and the chunks they share, followed
    // through their relative imports.
    const seen = new Set<string>();
    const visit = (file: string) => {
      if (seen.has(file)) return;
      seen.add(file);
      const code = readFileSync(join(root, 'packages/core/dist', file), 'utf8');
      const specifiers = [
        ...code.matchAll(/(?:^\s*import\s.*from\s*|^\s*export\s.*from\s*|\bimport\s*\(\s*|\brequire\s*\(\s*)['"]([^'"]+)['"]/gm),
      ].map((m) => m[1]!);
      for (const specifier of specifiers) {
        expect(specifier, `${file} imports ${specifier}`).toMatch(/^\.\/[\w-]+\.c?js$/);
        visit(specifier.slice(2));
      }
      expect(code, file).not.toMatch(/\bBuffer\b|\bprocess\.(env|nextTick|versions)/);
    };
    const manifest = JSON.parse(readFileSync(join(root, 'packages/core/package.json'), 'utf8')) as { exports: Record<string, unknown> };
    const entries = Object.keys(manifest.exports)
      .filter((key) => key !== './package.json')
      .map((key) => (key === '.' ? 'index' : key.slice(2)));
    for (const entry of entries) for (const extension of ['js', 'cjs']) visit(`${entry}.${extension}`);
    expect(seen.size).toBeGreaterThan(4);
  });
});
