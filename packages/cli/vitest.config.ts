import { defineConfig } from 'vitest/config';

// The CLI reads files and spawns itself, so it runs under Node only. Spawned processes and the headless browser
// take seconds on a loaded machine: 60 s each.
export default defineConfig({
  test: { environment: 'node', include: ['test/**/*.test.ts'], testTimeout: 60_000 },
});
