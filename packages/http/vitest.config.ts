import { defineConfig } from 'vitest/config';
import { withSourceMode } from '../../scripts/vitest-sources.mjs';

// The unit tests run twice: under Node, and under vitest's edge-runtime environment (the edge runtime's web
// globals: Request, Headers, URL, crypto). A test that needs Node is named `*.node.test.ts` and runs under Node
// only. The edge-runtime environment still exposes Buffer, so test/edge-bundle.node.test.ts also runs the shipped
// bundle inside a bare EdgeVM where no Node API exists.
// From sources (SLUICE_SOURCE=1, scripts/vitest-sources.mjs) the tests of the built entries and bundle are left out.
export default defineConfig(
  withSourceMode(
    {
      test: {
        projects: [
          { test: { name: 'node', environment: 'node', include: ['test/**/*.test.ts'] } },
          {
            test: {
              name: 'edge',
              environment: 'edge-runtime',
              include: ['test/**/*.test.ts'],
              exclude: ['test/**/*.node.test.ts'],
            },
          },
        ],
      },
    },
    { fullOnly: ['test/public-api.node.test.ts', 'test/edge-bundle.node.test.ts'] },
  ),
);
