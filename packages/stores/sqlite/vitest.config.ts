import { defineConfig } from 'vitest/config';
import { withSourceMode } from '../../../scripts/vitest-sources.mjs';

// vitest's defaults; with SLUICE_SOURCE=1 the other sluice packages load from their sources (scripts/vitest-sources.mjs),
// and the tests that fork processes running dist/ are left out of that mode.
export default defineConfig(
  withSourceMode(
    {},
    {
      fullOnly: [
        'test/failures.test.ts',
        'test/multi-process.test.ts',
        'test/leases-processes.test.ts',
        'test/event-loop-stall.test.ts',
        'test/deny-processes.test.ts',
      ],
    },
  ),
);
