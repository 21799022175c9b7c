// The root README's "Contributing" section links every API report checked in under packages/*/api/, so a reader
// finds each locked surface from there: this fails when a report exists that the section does not link, or the
// section links a report that does not exist (a package or subpath added or removed without its line).
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '../..');
const readme = readFileSync(join(root, 'README.md'), 'utf8');

/** Every `api/*.api.md` file under packages/, as a path from the repository root. */
function reports(dir: string): string[] {
  const out: string[] = [];
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    if (!entry.isDirectory() || entry.name === 'node_modules' || entry.name === 'dist') continue;
    const path = join(dir, entry.name);
    if (entry.name === 'api') {
      for (const file of readdirSync(path)) if (file.endsWith('.api.md')) out.push(relative(root, join(path, file)));
    } else out.push(...reports(path));
  }
  return out;
}

/** The text of the README's section under `## <title>`, up to the next `## ` heading. */
function section(title: string): string {
  const start = readme.indexOf(`\n## ${title}\n`);
  if (start < 0) throw new Error(`README.md has no "## ${title}" section`);
  const end = readme.indexOf('\n## ', start + 1);
  return readme.slice(start, end < 0 ? undefined : end);
}

const onDisk = reports(join(root, 'packages')).sort();
const linked = [...section('Contributing').matchAll(/\]\((packages\/[^)\s]+\/api\/[^)\s/]+\.api\.md)\)/g)].map((m) => m[1]!);

describe("the root README's list of API reports", () => {
  it('finds the reports on disk', () => {
    expect(onDisk).toContain('packages/core/api/index.api.md');
    expect(onDisk).toContain('packages/http/api/ip.api.md');
  });

  it('links each report once', () => {
    expect(linked.filter((path, i) => linked.indexOf(path) !== i)).toEqual([]);
  });

  it('links every report that exists, and only those', () => {
    expect({
      missingFromReadme: onDisk.filter((path) => !linked.includes(path)),
      notOnDisk: linked.filter((path) => !existsSync(join(root, path))),
    }).toEqual({
      missingFromReadme: [],
      notOnDisk: [],
    });
  });
});
