// The one switch between the two ways a package's tests load the other sluice packages, applied by every package's
// vitest.config.ts. By default (`pnpm test`) `@sluice/*` resolves as a user's install would: package.json
// exports, so dist/, which turbo builds first. With SLUICE_SOURCE=1 (`pnpm test:fast`) every `@sluice/<name>` and
// subpath (`@sluice/core/config`, `@sluice/http/fetch`) resolves to the TypeScript entry tsup builds it from, and
// redis-script's `virtual:sluice-lua` is served by the same step tsup runs: no build needed.
//
// Tests that cannot run from sources are left out of that mode, and only of that mode:
// - whole files a package lists in `fullOnly` (they spawn the built CLI, bundle or fork dist/, or drive Chromium,
//   which only the full test command installs);
// - inside other files, the tests whose title says they read the build: "dist/…" or "the built …"/"the build …"
//   (vitest reports them as skipped).
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { configDefaults } from 'vitest/config';
import { viteLuaPlugin } from '../packages/stores/redis-script/build/lua.mjs';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '..');

/** True when the tests run against sources (SLUICE_SOURCE=1). */
export const FROM_SOURCES = process.env.SLUICE_SOURCE === '1';

/** Test titles that read the build: skipped from sources. */
export const READS_THE_BUILD = /^(?!.*(?:\bdist\/|\bthe buil[dt]\b))/i;

/**
 * Every `@sluice/*` specifier a package.json exports, with its source file (absolute). Fails loudly when an export has
 * no source folder, so a new subpath cannot silently resolve to a stale dist/ in the fast loop.
 * @returns {Map<string, string>}
 */
export function sourceEntries() {
  const entries = new Map();
  const visit = (dir, depth) => {
    const manifestFile = join(dir, 'package.json');
    if (existsSync(manifestFile)) {
      const manifest = JSON.parse(readFileSync(manifestFile, 'utf8'));
      if (!manifest.name?.startsWith('@sluice/')) return;
      for (const subpath of Object.keys(manifest.exports ?? { '.': null })) {
        if (subpath === './package.json') continue;
        // The folder tree equals the exports map: `.` is src/index.ts, and `./name` is src/name/index.ts.
        const source = join(dir, subpath === '.' ? 'src/index.ts' : `src/${subpath.slice(2)}/index.ts`);
        if (!existsSync(source)) {
          throw new Error(
            `[sluice] scripts/vitest-sources.mjs: ${manifest.name} exports ${subpath}, but ${source} does not exist; each subpath's entry is its folder's index.ts, as its tsup.config.ts builds it`,
          );
        }
        entries.set(subpath === '.' ? manifest.name : `${manifest.name}/${subpath.slice(2)}`, source);
      }
      return;
    }
    if (depth === 0) return;
    for (const entry of readdirSync(dir, { withFileTypes: true })) {
      if (entry.isDirectory() && entry.name !== 'node_modules') visit(join(dir, entry.name), depth - 1);
    }
  };
  visit(join(root, 'packages'), 2);
  return entries;
}

const escape = (text) => text.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&');

/**
 * A package's vitest config, as it is by default and with SLUICE_SOURCE=1 pointed at the sources.
 * @param {object} config what the package would pass to defineConfig
 * @param {{ fullOnly?: string[] }} [options] fullOnly: test files (globs, relative to the package) that need the full run
 */
export function withSourceMode(config, { fullOnly = [] } = {}) {
  if (!FROM_SOURCES) return config;
  const alias = [...sourceEntries()].map(([specifier, file]) => ({ find: new RegExp(`^${escape(specifier)}$`), replacement: file }));
  /** Aliases and the Lua step, for a config that does not inherit them from the root one. */
  const resolving = (part) => ({
    ...part,
    resolve: { ...part.resolve, alias: [...alias, ...toArray(part.resolve?.alias)] },
    plugins: [...(part.plugins ?? []), viteLuaPlugin()],
  });
  const leaveOut = (test = {}) => ({
    ...test,
    exclude: [...(test.exclude ?? configDefaults.exclude), ...fullOnly],
    testNamePattern: READS_THE_BUILD,
    passWithNoTests: true,
  });
  const test = leaveOut(config.test);
  if (Array.isArray(config.test?.projects)) {
    test.projects = config.test.projects.map((project) => {
      if (typeof project !== 'object' || project === null) return project;
      const patched = { ...project, test: leaveOut(project.test) };
      return project.extends === true ? patched : resolving(patched);
    });
  }
  return resolving({ ...config, test });
}

/** A vite `resolve.alias` in its array form. */
function toArray(alias) {
  if (alias === undefined) return [];
  if (Array.isArray(alias)) return alias;
  return Object.entries(alias).map(([find, replacement]) => ({ find, replacement }));
}
