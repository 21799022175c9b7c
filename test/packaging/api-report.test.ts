// Proves that `check:api` can fail: test/scripts/api-report.mjs writes the reports of a small hand-made package in
// a temp dir, then the check must pass on the same types and fail, showing the change and the command that rewrites
// the reports, when an export is added, removed or changed, when a subpath export disappears, and before a build.
// api-extractor takes a few seconds a run, so the cases share one reported package.
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

const script = resolve(dirname(fileURLToPath(import.meta.url)), '../scripts/api-report.mjs');
const made: string[] = [];

afterAll(() => {
  for (const dir of made) rmSync(dir, { recursive: true, force: true });
});

const INDEX = `export interface WidgetOptions {
    /** How many. */
    size?: number;
}
export declare function widget(options?: WidgetOptions): string;
`;
const EXTRA = 'export declare const EXTRA: number;\n';

function fixture(options: { extra?: boolean } = {}): string {
  const dir = mkdtempSync(join(tmpdir(), 'sluice-api-fixture-'));
  made.push(dir);
  mkdirSync(join(dir, 'dist'));
  const exports: Record<string, unknown> = { '.': { import: { types: './dist/index.d.ts', default: './dist/index.js' } } };
  if (options.extra === true) exports['./extra'] = { types: './dist/extra.d.ts', default: './dist/extra.js' };
  exports['./package.json'] = './package.json';
  writeFileSync(join(dir, 'package.json'), JSON.stringify({ name: '@sluice/api-fixture', version: '1.0.0', type: 'module', exports }));
  writeFileSync(join(dir, 'dist/index.d.ts'), INDEX);
  writeFileSync(join(dir, 'dist/extra.d.ts'), EXTRA);
  return dir;
}

function run(dir: string, ...args: string[]): { status: number | null; output: string } {
  const result = spawnSync(process.execPath, [script, ...args], { cwd: dir, encoding: 'utf8', timeout: 60_000 });
  return { status: result.status, output: `${result.stdout}\n${result.stderr}` };
}

// One package whose reports are written once; each case edits its built types, checks, and puts them back.
let reported = '';
beforeAll(() => {
  reported = fixture();
  const update = run(reported, '--update');
  expect(update.status, update.output).toBe(0);
}, 120_000);

function edited(edit: (index: string) => string): { status: number | null; output: string } {
  writeFileSync(join(reported, 'dist/index.d.ts'), edit(INDEX));
  try {
    return run(reported);
  } finally {
    writeFileSync(join(reported, 'dist/index.d.ts'), INDEX);
  }
}

describe('api-report.mjs', { timeout: 120_000 }, () => {
  it('writes one report per export with types, and the check passes on the same types', () => {
    const dir = fixture({ extra: true });
    const update = run(dir, '--update');
    expect(update.status, update.output).toBe(0);
    const index = readFileSync(join(dir, 'api/index.api.md'), 'utf8');
    expect(index).toContain('export function widget(options?: WidgetOptions): string;');
    expect(index).toContain('size?: number;');
    // No release-stage or "(undocumented)" marks: sluice has no release stages.
    expect(index).not.toMatch(/@public|\(undocumented\)/);
    expect(readFileSync(join(dir, 'api/extra.api.md'), 'utf8')).toContain('export const EXTRA: number;');
    const check = run(dir);
    expect(check.status, check.output).toBe(0);
    expect(check.output).toContain('matches its reports');
    // A subpath export that disappears leaves a report describing an API nobody ships: the check says so.
    const manifest = JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8'));
    delete manifest.exports['./extra'];
    writeFileSync(join(dir, 'package.json'), JSON.stringify(manifest));
    const stale = run(dir);
    expect(stale.status).toBe(1);
    expect(stale.output).toMatch(/api\/extra\.api\.md reports an export package\.json no longer has/);
    expect(run(dir, '--update').status).toBe(0);
    expect(existsSync(join(dir, 'api/extra.api.md'))).toBe(false);
  });

  it('fails when an export is added, and shows it with the command that rewrites the reports', () => {
    const { status, output } = edited((index) => `${index}export declare function added(): void;\n`);
    expect(status).toBe(1);
    expect(output).toContain('+export function added(): void;');
    expect(output).toContain('pnpm --filter @sluice/api-fixture api:update');
  });

  it('fails when an export is removed', () => {
    const { status, output } = edited((index) => index.replace(/export declare function widget.*\n/, ''));
    expect(status).toBe(1);
    expect(output).toContain('-export function widget(options?: WidgetOptions): string;');
  });

  it('fails when a signature changes, also in a type the export only refers to', () => {
    const returned = edited((index) => index.replace('): string;', '): number;'));
    expect(returned.status).toBe(1);
    expect(returned.output).toContain('+export function widget(options?: WidgetOptions): number;');
    const option = edited((index) =>
      index.replace('export interface WidgetOptions', 'interface WidgetOptions').replace('size?: number;', 'size?: string;'),
    );
    expect(option.status).toBe(1);
    expect(option.output).toContain('+    size?: string;');
  });

  it('passes a doc-comment-only edit (the report holds signatures, not prose)', () => {
    const { status, output } = edited((index) => index.replace('/** How many. */', '/** How many widgets. */'));
    expect(status, output).toBe(0);
  });

  it('fails, naming the build command, when the package is not built', () => {
    const dir = fixture();
    rmSync(join(dir, 'dist'), { recursive: true });
    const { status, output } = run(dir);
    expect(status).toBe(1);
    expect(output).toContain('pnpm --filter @sluice/api-fixture... build');
  });
});
