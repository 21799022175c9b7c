import { defineConfig } from 'vitest/config';
import { withSourceMode } from '../../../scripts/vitest-sources.mjs';

// Every store test runs twice: in Node and in vitest's edge-runtime environment (@edge-runtime/vm globals:
// fetch, crypto, TextEncoder as Vercel's edge runtime has them). The Upstash fixture and its redis-server run
// in Node, started once by the global setup; tests reach them over HTTP only. Files run one at a time, across both
// projects too (maxWorkers: 1): they share the fixture's request counters and its fault switch, and a file that
// sets a fault while the other project's file counts on a healthy fixture fails it (seen in CI: a fallback test
// got one healthy answer in three).
// From sources (SLUICE_SOURCE=1, scripts/vitest-sources.mjs) the tests that bundle and read dist/ are left out.
export default defineConfig(
  withSourceMode(
    {
      test: {
        globalSetup: ['./test/global-setup.ts'],
        fileParallelism: false,
        maxWorkers: 1,
        projects: [
          { extends: true, test: { name: 'node', environment: 'node', include: ['test/**/*.test.ts'] } },
          {
            extends: true,
            test: {
              name: 'edge-runtime',
              environment: 'edge-runtime',
              include: ['test/**/*.test.ts'],
              exclude: ['test/**/*.node.test.ts'],
            },
          },
        ],
      },
    },
    { fullOnly: ['test/edge-bundle.node.test.ts', 'test/edge-safety.node.test.ts'] },
  ),
);
