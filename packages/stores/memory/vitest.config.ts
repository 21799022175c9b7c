import { defineConfig } from 'vitest/config';
import { withSourceMode } from '../../../scripts/vitest-sources.mjs';

// The memory store is recommended for edge functions, so its tests run twice: under Node, and under vitest's
// edge-runtime environment (@edge-runtime/vm). `*.node.test.ts` files need Node (heap measurements) and run under
// Node only; they are typechecked with Node's types by tsconfig.node.json.
export default defineConfig(
  withSourceMode({
    test: {
      projects: [
        { extends: true, test: { name: 'node', environment: 'node', include: ['test/**/*.test.ts'] } },
        {
          extends: true,
          test: { name: 'edge-runtime', environment: 'edge-runtime', include: ['test/**/*.test.ts'], exclude: ['test/**/*.node.test.ts'] },
        },
      ],
    },
  }),
);
