// The runtime surface of @sluice/otel, listed name by name so it changes only on purpose, and the promise that
// makes @opentelemetry/api an optional peer: the built JavaScript never loads it (the user's Meter is passed in).
import { readFileSync } from 'node:fs';
import { describe, expect, test } from 'vitest';
import * as rootSource from '../src/index.js';

const ROOT = ['DURATION_BUCKETS', 'METRICS', 'decisionOutcome', 'sluiceMetrics'];

const names = (module: object) =>
  Object.keys(module)
    .filter((name) => name !== 'default')
    .sort();

describe('public API', () => {
  test('the root export (src/index.ts) is exactly the metrics API', () => {
    expect(names(rootSource)).toEqual(ROOT);
  });

  test('the built ESM entry exports the same names', async () => {
    expect(names(await import('../dist/index.js'))).toEqual(ROOT);
  });

  test('the built ESM and CJS entries import @sluice/core only (root, and /internal for the shared option checks), never @opentelemetry/api (types only)', () => {
    for (const file of ['../dist/index.js', '../dist/index.cjs']) {
      const code = readFileSync(new URL(file, import.meta.url), 'utf8');
      const imported = [...code.matchAll(/(?:from\s*|import\s*\(|require\()\s*["']([^"']+)["']/g)].map((m) => m[1]);
      expect(imported.length).toBeGreaterThan(0);
      expect(new Set(imported)).toEqual(new Set(['@sluice/core', '@sluice/core/internal']));
      expect(code).not.toMatch(/@opentelemetry/);
    }
  });

  test('@opentelemetry/api is an optional peer dependency, not a dependency', () => {
    const manifest = JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8')) as Record<
      string,
      Record<string, unknown> | undefined
    >;
    expect(manifest.dependencies?.['@opentelemetry/api']).toBeUndefined();
    expect(manifest.peerDependencies?.['@opentelemetry/api']).toMatch(/^\^1\./);
    expect(manifest.peerDependenciesMeta?.['@opentelemetry/api']).toEqual({ optional: true });
  });
});
