import { defineConfig } from 'vitest/config';
import { withSourceMode } from '../../scripts/vitest-sources.mjs';

// The one test checks the build (dist/), so with SLUICE_SOURCE=1 (scripts/vitest-sources.mjs) nothing runs here.
export default defineConfig(withSourceMode({}, { fullOnly: ['test/sluice-error.test.ts'] }));
