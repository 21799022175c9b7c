import { defineConfig } from 'vitest/config';
import { withSourceMode } from '../../scripts/vitest-sources.mjs';

// The suite's own tests. Fixture files (test/fixtures) are run by a nested vitest on purpose, never directly.
export default defineConfig(
  withSourceMode({
    test: {
      include: ['test/**/*.test.ts'],
      exclude: ['**/node_modules/**', 'test/fixtures/**'],
      testTimeout: 60_000,
    },
  }),
);
