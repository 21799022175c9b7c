import { defineConfig } from 'tsup';
import { library } from '../../scripts/tsup-preset.mjs';
import { esbuildPagePlugin } from './build/page.mjs';

// Two outputs: the library entry (like every package) and the `sluice` binary with tune's parsing worker (loaded
// from beside it), ESM only, with a shebang so npm's bin link runs it directly; the dashboard's page script and
// style are built in as text (build/page.mjs).
export default defineConfig([
  library(),
  {
    entry: ['src/cli.ts', 'src/tune-worker.ts'],
    format: ['esm'],
    sourcemap: true,
    target: 'es2022',
    banner: { js: '#!/usr/bin/env node' },
    esbuildPlugins: [esbuildPagePlugin()],
  },
]);
