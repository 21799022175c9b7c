import { defineConfig } from 'vitest/config';
import { withSourceMode } from '../../../scripts/vitest-sources.mjs';

// The unit tests run twice: under Node (proxy.ts) and under vitest's edge-runtime environment (middleware.ts on
// the edge runtime: its web globals from @edge-runtime/vm). That environment still exposes Buffer and process,
// so test/edge-bundle.node.test.ts also runs the built entry inside a bare EdgeVM where no Node API exists. A test
// that needs Node is named `*.node.test.ts` and runs under Node only.
// From sources (SLUICE_SOURCE=1, scripts/vitest-sources.mjs) the tests of dist/ and its bundle are left out.
export default defineConfig(
  withSourceMode(
    {
      test: {
        projects: [
          { test: { name: 'node', environment: 'node', include: ['test/**/*.test.ts'] } },
          {
            test: { name: 'edge', environment: 'edge-runtime', include: ['test/**/*.test.ts'], exclude: ['test/**/*.node.test.ts'] },
          },
        ],
      },
    },
    { fullOnly: ['test/dist.test.ts', 'test/edge-bundle.node.test.ts'] },
  ),
);
