import { defineConfig } from 'tsup';

export default defineConfig({
  entry: ['src/index.ts'],
  format: ['esm'], // vitest, which the suite is written in, cannot be require()d: an ESM-only package is the honest shape
  dts: true,
  clean: true,
  sourcemap: true,
  target: 'es2022',
  external: ['vitest'],
});
