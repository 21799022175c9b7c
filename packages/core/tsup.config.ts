import { defineConfig } from 'tsup';

export default defineConfig({
  // Each entry but `index` is a subpath: `@sluice/core/store` (the store-author API), `/concurrency`, `/shedding`
  // `/config`, `/analytics` and `/internal` (the helpers sluice's own packages share). Splitting puts the code the entries share in chunks, in CJS too, so SluiceError, FailureAnswer and the
  // rest exist once and `instanceof` works across entries.
  entry: {
    index: 'src/index.ts',
    store: 'src/store-api.ts',
    concurrency: 'src/concurrency-api.ts',
    shedding: 'src/shedding-api.ts',
    config: 'src/config-api.ts',
    analytics: 'src/analytics-api.ts',
    internal: 'src/internal-api.ts',
  },
  format: ['esm', 'cjs'],
  splitting: true,
  dts: true,
  clean: true,
  sourcemap: true,
  target: 'es2022',
});
