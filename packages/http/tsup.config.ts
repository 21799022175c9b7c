import { defineConfig } from 'tsup';

export default defineConfig({
  // `ip` is the `@sluice/http/ip` subpath (address parsing, CIDR ranges, forwarding chains). Splitting puts the
  // parsers both entries use in one chunk, in CJS too, so a bundle that imports both ships them once.
  entry: { index: 'src/index.ts', ip: 'src/ip-api.ts' },
  format: ['esm', 'cjs'],
  splitting: true,
  dts: true,
  clean: true,
  sourcemap: true,
  target: 'es2022',
});
