import { defineConfig } from 'tsup';

export default defineConfig({
  // `store` is the `@sluice/core/store` subpath (store-author API). Splitting puts the code both entries share in
  // one chunk, in CJS too, so SluiceError, Failover and the rest exist once and `instanceof` works across entries.
  entry: { index: 'src/index.ts', store: 'src/store-api.ts' },
  format: ['esm', 'cjs'],
  splitting: true,
  dts: true,
  clean: true,
  sourcemap: true,
  target: 'es2022',
});
