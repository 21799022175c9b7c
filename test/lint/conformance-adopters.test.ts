// Every first-party store runs the whole conformance suite: each describeStoreConformance call in the repository's
// tests (packages/*/test, test/) passes `requireAll: true`, which refuses a run that would report a test as skipped
// (no inspectKeys, take, reserve or leases not announced). The suite's own fixtures (packages/conformance/test: mutant
// stores that show what is skipped without those options) are the one exception. A new adopter without the option
// fails here, naming its file.
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '../..');
/** The suite's own tests run it on mutant stores, some deliberately without inspectKeys. */
const EXEMPT = 'packages/conformance/';

function testFiles(dir: string): string[] {
  const out: string[] = [];
  for (const name of readdirSync(dir)) {
    if (name === 'node_modules' || name === 'dist') continue;
    const path = join(dir, name);
    if (statSync(path).isDirectory()) out.push(...testFiles(path));
    else if (/\.(test|fixture)\.ts$/.test(name)) out.push(path);
  }
  return out;
}

/** The options object of each describeStoreConformance call: from its `({` to the matching `}`. */
function calls(text: string): string[] {
  const found: string[] = [];
  for (const match of text.matchAll(/describeStoreConformance(?:<[^>]*>)?\(\s*\{/g)) {
    const start = match.index + match[0].length - 1;
    let depth = 0;
    for (let i = start; i < text.length; i++) {
      if (text[i] === '{') depth++;
      else if (text[i] === '}' && --depth === 0) {
        found.push(text.slice(start, i + 1));
        break;
      }
    }
  }
  return found;
}

const adopters = [...testFiles(join(root, 'packages')), ...testFiles(join(root, 'test'))]
  .map((path) => ({ path: relative(root, path), text: readFileSync(path, 'utf8') }))
  .filter((file) => !file.path.startsWith(EXEMPT) && file.path !== relative(root, fileURLToPath(import.meta.url)))
  .flatMap((file) => calls(file.text).map((options) => ({ path: file.path, options })));

describe('first-party conformance runs skip nothing', () => {
  it('finds the first-party adopters (every store, the tier, the Redis Cluster)', () => {
    const paths = new Set(adopters.map((a) => a.path));
    for (const path of [
      'packages/stores/memory/test/conformance.test.ts',
      'packages/stores/redis/test/conformance.test.ts',
      'packages/stores/sqlite/test/conformance.test.ts',
      'packages/stores/upstash/test/conformance.test.ts',
      'packages/tiered/test/conformance.test.ts',
      'packages/stores/redis/test/cluster.test.ts',
    ]) {
      expect(paths.has(path), `${path} must adopt the conformance suite`).toBe(true);
    }
    expect(adopters.length).toBeGreaterThanOrEqual(12);
  });

  it('every describeStoreConformance call passes requireAll: true, so a skipped test fails its run', () => {
    const without = adopters
      .filter((a) => !/\brequireAll:\s*true\b/.test(a.options))
      .map((a) => `${a.path}: ${a.options.split('\n')[1]?.trim()}`);
    expect(without, 'add requireAll: true (and inspectKeys) to these runs').toEqual([]);
  });
});
