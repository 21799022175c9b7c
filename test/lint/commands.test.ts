// The README's three commands: the install command brings only what the demo needs, `pnpm test` installs what the
// tests need itself (scripts/test-setup.sh, a no-op once done), and `pnpm test:fast` loads every `@sluice/*` export
// from its source (scripts/vitest-sources.mjs).
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { sourceEntries } from '../../scripts/vitest-sources.mjs';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '../..');
const readme = readFileSync(join(root, 'README.md'), 'utf8');
const manifest = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as { scripts: Record<string, string> };
const block = (marker: string) => new RegExp(`<!-- ${marker} -->\\n\`\`\`sh\\n([^\`]*)\`\`\``).exec(readme)?.[1]?.trim();

describe("the README's commands", () => {
  it('the install command installs no test tool, and pnpm install builds nothing for other Node versions', () => {
    const install = block('command:install');
    expect(install).toMatch(/pnpm install && pnpm demo$/);
    expect(install).not.toMatch(/luacheck|chromium|node-versions|test-setup/);
    expect(manifest.scripts.postinstall).toBeUndefined();
  });

  it('the test command is pnpm test, and the fast one pnpm test:fast', () => {
    expect(block('command:test')).toBe('pnpm test');
    expect(block('command:test-fast')).toBe('pnpm test:fast');
    expect(manifest.scripts['test:fast']).toContain('SLUICE_SOURCE=1 turbo run test:unit --only');
  });

  it('scripts/test-setup.sh does nothing, silently, when everything is installed (pnpm test ran it first)', () => {
    const started = Date.now();
    const result = spawnSync('sh', [join(root, 'scripts/test-setup.sh')], { cwd: root, encoding: 'utf8' });
    expect([result.status, result.stdout, result.stderr]).toEqual([0, '', '']);
    expect(Date.now() - started).toBeLessThan(15_000);
  });
});

describe('the sources the fast loop loads', () => {
  it('every export of every package has its source entry, as tsup builds it', () => {
    const entries = Object.fromEntries([...sourceEntries()].map(([specifier, file]) => [specifier, relative(root, file)]));
    expect(entries).toMatchObject({
      '@sluice/core': 'packages/core/src/index.ts',
      '@sluice/core/config': 'packages/core/src/config/index.ts',
      '@sluice/http/fetch': 'packages/http/src/fetch/index.ts',
      '@sluice/http/adapter': 'packages/http/src/adapter/index.ts',
      '@sluice/redis-script': 'packages/stores/redis-script/src/index.ts',
    });
  });
});
