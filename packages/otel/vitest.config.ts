import { defineConfig } from 'vitest/config';
import { withSourceMode } from '../../scripts/vitest-sources.mjs';

// The integration runs wherever core runs (it imports nothing at run time but @sluice/core), so its tests run under
// Node and under vitest's edge-runtime environment (@edge-runtime/vm), with the OpenTelemetry SDK in both.
// The property test builds a MeterProvider per run: 30 s each, so a loaded machine does not fail it.
// From sources (SLUICE_SOURCE=1, scripts/vitest-sources.mjs) the test of the built entries is left out.
export default defineConfig(
  withSourceMode(
    {
      test: {
        projects: [
          { extends: true, test: { name: 'node', environment: 'node', include: ['test/**/*.test.ts'], testTimeout: 30_000 } },
          {
            extends: true,
            test: {
              name: 'edge-runtime',
              environment: 'edge-runtime',
              include: ['test/**/*.test.ts'],
              exclude: ['test/**/*.node.test.ts'],
              testTimeout: 30_000,
            },
          },
        ],
      },
    },
    { fullOnly: ['test/public-api.node.test.ts'] },
  ),
);
