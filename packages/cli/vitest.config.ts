import { defineConfig } from 'vitest/config';
import { withSourceMode } from '../../scripts/vitest-sources.mjs';

// The CLI reads files and spawns itself, so it runs under Node only. Spawned processes and the headless browser
// take seconds on a loaded machine: 60 s each.
// From sources (SLUICE_SOURCE=1, scripts/vitest-sources.mjs) the tests that spawn dist/cli.js and the two that drive
// Chromium are left out.
export default defineConfig(
  withSourceMode(
    {
      test: { environment: 'node', include: ['test/**/*.test.ts'], testTimeout: 60_000 },
    },
    {
      fullOnly: [
        'test/cli.test.ts',
        'test/config.test.ts',
        'test/config-deny.test.ts',
        'test/config-backup.test.ts',
        'test/deny-large-lists.test.ts',
        'test/deny-stored-entries.test.ts',
        'test/deny-structure-large.test.ts',
        'test/deny-pickup.test.ts',
        'test/threads.test.ts',
        'test/dashboard.test.ts',
        'test/html.test.ts',
      ],
    },
  ),
);
