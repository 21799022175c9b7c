import { defineConfig } from 'vitest/config';
import { withSourceMode } from '../../../scripts/vitest-sources.mjs';

// vitest's defaults; with SLUICE_SOURCE=1 the other sluice packages load from their sources (scripts/vitest-sources.mjs).
// The multi-process lease test forks workers that import the built package, so it needs the full run.
export default defineConfig(withSourceMode({}, { fullOnly: ['test/leases.test.ts'] }));
