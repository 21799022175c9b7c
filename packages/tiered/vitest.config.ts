import { defineConfig } from 'vitest/config';
import { withSourceMode } from '../../scripts/vitest-sources.mjs';

// The tier is meant for edge functions too, so its unit tests run under Node and under vitest's edge-runtime
// environment (@edge-runtime/vm). The multi-process simulation against a real redis-server is in test/tiered.
// Property tests and in-process fleets run thousands of async decisions: 30 s each, so a loaded machine does not fail them.
export default defineConfig(
  withSourceMode({
    test: {
      projects: [
        { extends: true, test: { name: 'node', environment: 'node', include: ['test/**/*.test.ts'], testTimeout: 30_000 } },
        { extends: true, test: { name: 'edge-runtime', environment: 'edge-runtime', include: ['test/**/*.test.ts'], testTimeout: 30_000 } },
      ],
    },
  }),
);
