import { defineConfig } from 'vitest/config';
import { withSourceMode } from '../../scripts/vitest-sources.mjs';

// Core is the edge-safe package, so its tests run twice: under Node, and under vitest's edge-runtime environment
// (@edge-runtime/vm: the globals Vercel's edge runtime has, no Node APIs to lean on by accident). A test that needs
// Node is named `*.node.test.ts` and runs under Node only.
// From sources (SLUICE_SOURCE=1, scripts/vitest-sources.mjs) the test of the built CJS and ESM entries is left out.
export default defineConfig(
  withSourceMode(
    {
      test: {
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
    { fullOnly: ['test/public-api.node.test.ts'] },
  ),
);
