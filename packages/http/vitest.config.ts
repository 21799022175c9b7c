import { defineConfig } from 'vitest/config';

// The unit tests run twice: under Node, and under vitest's edge-runtime environment (the edge runtime's web
// globals: Request, Headers, URL, crypto). That environment still exposes Buffer, so test/node/edge-bundle.test.ts
// also runs the shipped bundle inside a bare EdgeVM where no Node API exists.
export default defineConfig({
  test: {
    projects: [
      { test: { name: 'node', environment: 'node', include: ['test/**/*.test.ts'] } },
      { test: { name: 'edge', environment: 'edge-runtime', include: ['test/*.test.ts'] } },
    ],
  },
});
