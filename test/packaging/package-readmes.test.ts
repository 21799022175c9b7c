// What a user sees on the npm website and in the tarball besides the code: the package README (rendered by
// npmjs.com, where a relative link leads nowhere), the LICENSE, and where the package came from.
import { existsSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { describe, expect, it } from 'vitest';
import { publishedPackages, root } from './workspace.js';

const REPOSITORY = 'https://github.com/sluice-dev/sluice';
const packages = publishedPackages().map(({ dir, manifest }) => ({ dir, manifest, path: relative(root, dir).split('\\').join('/') }));

/** Every link target in a markdown text: inline links and images, reference definitions, HTML href and src. */
function linkTargets(markdown: string): string[] {
  const prose = markdown.replace(/^(`{3,}|~{3,})[^\n]*\n[\s\S]*?^\1[ \t]*$/gm, '').replace(/`[^`\n]*`/g, '');
  const inline = [...prose.matchAll(/\]\(\s*<?([^)\s>]+)>?(?:\s+"[^"]*")?\s*\)/g)].map((m) => m[1]!);
  const definitions = [...prose.matchAll(/^\s{0,3}\[[^\]]+\]:\s*<?(\S+?)>?(?:\s|$)/gm)].map((m) => m[1]!);
  const html = [...prose.matchAll(/\b(?:href|src)\s*=\s*["']([^"']+)["']/gi)].map((m) => m[1]!);
  return [...inline, ...definitions, ...html];
}

describe('package READMEs, LICENSE and manifests', () => {
  it('finds the relative links it must reject (inline, image, reference, HTML) and ignores code', () => {
    const sample = [
      'See [core](../core) and ![logo](./logo.png "Logo"), [ref][r], <a href="../http">http</a>.',
      '[r]: ../../README.md',
      '`[not](a-link)` and [web](https://example.com) and [here](#options)',
      '```md',
      '[inside](code-block)',
      '```',
    ].join('\n');
    expect(linkTargets(sample).sort()).toEqual(
      ['#options', '../../README.md', '../core', '../http', './logo.png', 'https://example.com'].sort(),
    );
  });

  for (const { dir, manifest, path } of packages) {
    it(`${manifest.name}: README links are absolute (npmjs.com renders no relative link) and name files that exist`, () => {
      const readme = readFileSync(join(dir, 'README.md'), 'utf8');
      const relativeLinks = linkTargets(readme).filter((target) => !/^(https?:|mailto:|#)/.test(target));
      expect(relativeLinks, `make these ${REPOSITORY}/blob/main/... or /tree/main/... URLs`).toEqual([]);
      for (const target of linkTargets(readme).filter((t) => t.startsWith(`${REPOSITORY}/`))) {
        const inRepo = /^https:\/\/github\.com\/sluice-dev\/sluice\/(?:blob|tree)\/main\/([^#?]+)/.exec(target);
        if (target.startsWith(`${REPOSITORY}/issues`)) continue;
        expect(inRepo, `${target}: link into the repository as /blob/main/<path> or /tree/main/<path>`).not.toBeNull();
        expect(existsSync(join(root, inRepo![1]!)), `${target} names a path that does not exist`).toBe(true);
      }
    });

    it(`${manifest.name}: ships the root LICENSE, and says where it came from (repository with directory, homepage, bugs)`, () => {
      expect(manifest.license).toBe('MIT');
      expect(readFileSync(join(dir, 'LICENSE'), 'utf8')).toBe(readFileSync(join(root, 'LICENSE'), 'utf8'));
      expect(manifest.repository).toEqual({ type: 'git', url: `git+${REPOSITORY}.git`, directory: path });
      expect(manifest.homepage).toBe(`${REPOSITORY}/tree/main/${path}#readme`);
      expect(manifest.bugs).toEqual({ url: `${REPOSITORY}/issues` });
    });
  }

  it('the root LICENSE is MIT, copyright the Sluice authors', () => {
    const license = readFileSync(join(root, 'LICENSE'), 'utf8');
    expect(license).toMatch(/^MIT License\n\nCopyright \(c\) The Sluice authors\n/);
    expect(packages.length).toBeGreaterThanOrEqual(10);
  });
});
