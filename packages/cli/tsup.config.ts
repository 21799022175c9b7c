import { defineConfig } from 'tsup';
import { library } from '../../scripts/tsup-preset.mjs';

// Two outputs: the library entry (like every package) and the `sluice` binary, ESM only, with a shebang so npm's
// bin link runs it directly.
export default defineConfig([
  library(),
  { entry: ['src/cli.ts'], format: ['esm'], sourcemap: true, target: 'es2022', banner: { js: '#!/usr/bin/env node' } },
]);
