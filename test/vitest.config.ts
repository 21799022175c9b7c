import { defineConfig } from 'vitest/config';

// Cross-package suites. They start real processes (npm, node, redis-server), so each file runs in its own fork
// and the default per-test budget is generous; suites that need more state their own timeout.
export default defineConfig({
  test: {
    include: ['**/*.test.ts'],
    exclude: ['**/node_modules/**', '**/fixtures/**'],
    pool: 'forks',
    testTimeout: 30_000,
    hookTimeout: 60_000,
  },
});
