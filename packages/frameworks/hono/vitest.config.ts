import { defineConfig } from 'vitest/config';
import { withSourceMode } from '../../../scripts/vitest-sources.mjs';

// The unit tests run twice: under Node and under vitest's edge-runtime environment (the web globals of
// Cloudflare-like runtimes, from @edge-runtime/vm), driven through `app.request()`. A test that needs Node (the
// real-HTTP tests on @hono/node-server, the Worker bundle in a bare EdgeVM) is named `*.node.test.ts` and runs under
// Node only.
// From sources (SLUICE_SOURCE=1, scripts/vitest-sources.mjs) the bundle test, which bundles dist/, is left out.
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
    { fullOnly: ['test/edge-bundle.node.test.ts'] },
  ),
);
