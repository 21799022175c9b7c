import { defineConfig } from 'tsup';

// Two outputs: the library entry (ESM + CJS with types, like every package) and the `sluice` binary, ESM only,
// with a shebang so npm's bin link runs it directly.
export default defineConfig([
  {
    entry: ['src/index.ts'],
    format: ['esm', 'cjs'],
    dts: true,
    clean: true,
    sourcemap: true,
    target: 'es2022',
  },
  {
    entry: ['src/cli.ts'],
    format: ['esm'],
    sourcemap: true,
    target: 'es2022',
    banner: { js: '#!/usr/bin/env node' },
  },
]);
