import { defineConfig } from 'vitest/config';

// Every store test runs twice: in Node and in vitest's edge-runtime environment (@edge-runtime/vm globals:
// fetch, crypto, TextEncoder as Vercel's edge runtime has them). The Upstash fixture and its redis-server run
// in Node, started once by the global setup; tests reach them over HTTP only. Files run one at a time: they
// share the fixture's request counters, and the machine is small.
export default defineConfig({
  test: {
    globalSetup: ['./test/global-setup.ts'],
    fileParallelism: false,
    projects: [
      { extends: true, test: { name: 'node', environment: 'node', include: ['test/**/*.test.ts'] } },
      { extends: true, test: { name: 'edge-runtime', environment: 'edge-runtime', include: ['test/**/*.test.ts'], exclude: ['test/**/*.node.test.ts'] } },
    ],
  },
});
