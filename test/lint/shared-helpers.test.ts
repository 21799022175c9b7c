// Option checks, value descriptions, duration parsing and the promise check are written once, in core's source
// (rejectUnknownOptions, describeValue, durationOption, optionalFunction, isPromiseLike), which the other packages
// import from `@sluice/core/internal`, and the NOSCRIPT fallback once, in @sluice/redis-script (runScript,
// isNoScript); every package uses them: this fails when a package's source grows its own copy, so the messages a
// user reads and the behaviour they rely on stay the same everywhere.
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '../..');

/** Where the one copy of each lives. */
const HOME = new Set([
  'packages/core/src/shared/validate.ts',
  'packages/core/src/shared/describe.ts',
  'packages/core/src/shared/duration.ts',
  'packages/core/src/shared/promise.ts',
  'packages/stores/redis-script/src/run-script.ts',
]);

function sources(dir: string): string[] {
  const out: string[] = [];
  for (const name of readdirSync(dir)) {
    if (name === 'node_modules' || name === 'dist' || name === 'test') continue;
    const path = join(dir, name);
    if (statSync(path).isDirectory()) out.push(...sources(path));
    else if (path.endsWith('.ts') && path.includes(`${'/src/'}`)) out.push(path);
  }
  return out;
}

const files = sources(join(root, 'packages')).map((path) => ({ path: relative(root, path), text: readFileSync(path, 'utf8') }));

describe('shared option helpers', () => {
  it("finds the packages' sources", () => {
    expect(files.some((f) => f.path === 'packages/http/src/compile-options.ts')).toBe(true);
  });

  it('no package writes its own unknown-option loop: they call rejectUnknownOptions', () => {
    const own = files.filter((f) => !HOME.has(f.path) && /unknown (\w+ )?option \$\{/.test(f.text)).map((f) => f.path);
    expect(own).toEqual([]);
  });

  it('no package keeps its own copy of describe: they call describeValue', () => {
    const own = files.filter((f) => !HOME.has(f.path) && /'an array'|"an array"/.test(f.text)).map((f) => f.path);
    expect(own).toEqual([]);
  });

  it('no package checks for a promise its own way: they call isPromiseLike', () => {
    const own = files.filter((f) => !HOME.has(f.path) && /then\?: unknown|\.then === 'function'/.test(f.text)).map((f) => f.path);
    expect(own).toEqual([]);
  });

  it('no package writes its own callback-option check: they call optionalFunction', () => {
    const own = files.filter((f) => !HOME.has(f.path) && /must be a function \$\{/.test(f.text)).map((f) => f.path);
    expect(own).toEqual([]);
  });

  it('no package parses durations its own way: they call durationOption (or parseDuration)', () => {
    const own = files
      .filter((f) => !HOME.has(f.path) && /\(ms\|s\|m\|h\|d\)|must be an integer number of ms|number of ms from/.test(f.text))
      .map((f) => f.path);
    expect(own).toEqual([]);
  });

  it('no store detects NOSCRIPT its own way: they call runScript', () => {
    const own = files.filter((f) => !HOME.has(f.path) && /NOSCRIPT\\b|startsWith\('NOSCRIPT/.test(f.text)).map((f) => f.path);
    expect(own).toEqual([]);
  });
});
