import { defineConfig } from 'tsup';
import { library } from '../../scripts/tsup-preset.mjs';
import { esbuildPagePlugin } from './build/page.mjs';

// Two outputs: the library entry (like every package) and the `sluice` binary with tune's parsing worker, ESM only,
// with a shebang so npm's bin link runs it directly; the dashboard's page script and style are built in as text
// (build/page.mjs). The worker is named as an output so it lands at dist/tune-worker.js, beside dist/cli.js and
// dist/index.js, where src/tune/tune-threads.ts (bundled into both) loads it from at run time.
export default defineConfig([
  library(),
  {
    entry: { cli: 'src/cli.ts', 'tune-worker': 'src/tune/tune-worker.ts' },
    format: ['esm'],
    sourcemap: true,
    target: 'es2022',
    banner: { js: '#!/usr/bin/env node' },
    esbuildPlugins: [esbuildPagePlugin()],
  },
]);
