import { defineConfig } from 'tsup';
import { library } from '../../scripts/tsup-preset.mjs';

// vitest, which the suite is written in, cannot be require()d: an ESM-only package is the honest shape.
export default defineConfig(library({ format: ['esm'], external: ['vitest'] }));
