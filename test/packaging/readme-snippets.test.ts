// Every ```ts block of the root README and of each package README compiles as written under `strict: true`, against
// the built packages' types: a user pastes these. Each block is one module; its imports resolve to the workspace's
// own packages (dist/*.d.ts) and to the third-party versions the workspace tests against. A block that is
// deliberately a fragment must say so with `<!-- snippet: fragment -->` on the line above it.
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { publishedPackages, root } from './workspace.js';

interface Snippet {
  readme: string;
  line: number;
  code: string;
  fragment: boolean;
}

const FRAGMENT = '<!-- snippet: fragment -->';

/** The ```ts blocks of a markdown text, with the line each starts on and whether it is marked as a fragment. */
function tsBlocks(readme: string, markdown: string): Snippet[] {
  const lines = markdown.split(/\r?\n/);
  const blocks: Snippet[] = [];
  for (let i = 0; i < lines.length; i++) {
    const open = /^(`{3,})(\w*)\s*$/.exec(lines[i]!);
    if (open === null) continue;
    const close = lines.findIndex((line, j) => j > i && line.trim() === open[1]);
    if (close < 0) throw new Error(`${readme}:${i + 1}: code block not closed`);
    if (open[2] === 'ts' || open[2] === 'typescript') {
      let above = i - 1;
      while (above >= 0 && lines[above]!.trim() === '') above--;
      blocks.push({ readme, line: i + 1, code: lines.slice(i + 1, close).join('\n') + '\n', fragment: lines[above]?.trim() === FRAGMENT });
    }
    i = close;
  }
  return blocks;
}

const readmes = ['README.md', ...publishedPackages().map(({ dir }) => relative(root, join(dir, 'README.md')).split('\\').join('/'))];
const snippets = readmes.flatMap((readme) => tsBlocks(readme, readFileSync(join(root, readme), 'utf8')));

/** Where a module the snippets import is installed: the suites' own dependencies first, then each package's. */
const SEARCH = ['test', ...publishedPackages().map(({ dir }) => relative(root, dir))];

function pathsFor(specifiers: Iterable<string>): Record<string, string[]> {
  const paths: Record<string, string[]> = {};
  for (const specifier of specifiers) {
    const name = specifier.startsWith('@') ? specifier.split('/').slice(0, 2).join('/') : specifier.split('/')[0]!;
    if (name.startsWith('node:') || paths[name] !== undefined) continue;
    const home = SEARCH.map((dir) => join(root, dir, 'node_modules')).find((modules) => existsSync(join(modules, name)));
    if (home === undefined) throw new Error(`a README imports ${name}, which no workspace package has installed`);
    const typesName = `@types/${name.replace(/^@/, '').replace('/', '__')}`;
    paths[name] = [join(home, typesName), join(home, name)].filter((candidate) => existsSync(candidate));
    paths[`${name}/*`] = [join(home, name, '*')];
  }
  // A subpath a package exports (`@sluice/core/store`) resolves to that export's types, as a user's bundler finds it.
  for (const specifier of specifiers) {
    const name = specifier.startsWith('@') ? specifier.split('/').slice(0, 2).join('/') : specifier.split('/')[0]!;
    const home = paths[name]?.find((candidate) => candidate.endsWith(name));
    if (specifier === name || home === undefined || !existsSync(join(home, 'package.json'))) continue;
    const exported = JSON.parse(readFileSync(join(home, 'package.json'), 'utf8')).exports?.[`.${specifier.slice(name.length)}`];
    const types: unknown = exported?.import?.types ?? exported?.types;
    if (typeof types === 'string') paths[specifier] = [join(home, types)];
  }
  return paths;
}

let scratch = '';
afterAll(() => {
  if (scratch !== '') rmSync(scratch, { recursive: true, force: true });
});

describe('README snippets compile under strict TypeScript as written', () => {
  it('finds the ```ts blocks of the root README and of every package README', () => {
    expect(readmes.length).toBeGreaterThanOrEqual(11);
    expect(snippets.length).toBeGreaterThanOrEqual(15);
    expect(snippets.filter((s) => s.fragment).map((s) => `${s.readme}:${s.line}`)).toEqual([]);
  });

  it('every block typechecks with strict: true against the built packages', () => {
    scratch = mkdtempSync(join(tmpdir(), 'sluice-readme-snippets-'));
    const files: string[] = [];
    const specifiers = new Set<string>();
    for (const [i, snippet] of snippets.entries()) {
      if (snippet.fragment) continue;
      const file = join(scratch, `${String(i).padStart(2, '0')}-${snippet.readme.replace(/[/.]/g, '_')}-L${snippet.line}.ts`);
      writeFileSync(file, snippet.code);
      files.push(file);
      for (const match of snippet.code.matchAll(/(?:\bfrom\s+|\bimport\s*\(?\s*)['"]([^'"]+)['"]/g)) specifiers.add(match[1]!);
    }
    const tsconfig = {
      compilerOptions: {
        strict: true,
        noEmit: true,
        target: 'es2022',
        lib: ['es2022', 'dom', 'dom.iterable'],
        module: 'esnext',
        moduleResolution: 'bundler',
        moduleDetection: 'force',
        esModuleInterop: true,
        skipLibCheck: true,
        types: ['node'],
        typeRoots: [join(root, 'node_modules/@types')],
        paths: pathsFor(specifiers),
      },
      files,
    };
    writeFileSync(join(scratch, 'tsconfig.json'), JSON.stringify(tsconfig, null, 2));
    const tsc = join(root, 'node_modules/typescript/bin/tsc');
    const result = spawnSync(process.execPath, [tsc, '-p', join(scratch, 'tsconfig.json')], { encoding: 'utf8', timeout: 120_000 });
    // Name each error after the README and line it comes from.
    const output = `${result.stdout}${result.stderr}`.replace(
      /^.*?(\d\d)-[^(]*?-L(\d+)\.ts\((\d+),\d+\)/gm,
      (_all, index: string, _line, row: string) => {
        const snippet = snippets[Number(index)]!;
        return `${snippet.readme}:${snippet.line + Number(row)}`;
      },
    );
    expect(output.trim()).toBe('');
    expect(result.status).toBe(0);
  }, 150_000);
});
