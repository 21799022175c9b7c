import { defineConfig } from 'vitest/config';

// The unit tests run twice: under Node (proxy.ts) and under vitest's edge-runtime environment (middleware.ts on
// the edge runtime: its web globals from @edge-runtime/vm). That environment still exposes Buffer and process,
// so test/node/edge-bundle.test.ts also runs the built entry inside a bare EdgeVM where no Node API exists.
export default defineConfig({
  test: {
    projects: [
      { test: { name: 'node', environment: 'node', include: ['test/**/*.test.ts'] } },
      { test: { name: 'edge', environment: 'edge-runtime', include: ['test/*.test.ts'] } },
    ],
  },
});
