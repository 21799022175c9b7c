import { defineConfig } from 'vitest/config';
import { withSourceMode } from '../../../scripts/vitest-sources.mjs';

// vitest's defaults; with SLUICE_SOURCE=1 the other sluice packages load from their sources (scripts/vitest-sources.mjs).
export default defineConfig(withSourceMode({}));
