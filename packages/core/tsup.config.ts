import { defineConfig } from 'tsup';

export default defineConfig({
  // Each entry but `index` is a subpath: `@sluice/core/store` (the store-author API), `/concurrency`, `/shedding`
  // `/config`, `/analytics` and `/internal` (the helpers sluice's own packages share). Splitting puts the code the entries share in chunks, in CJS too, so SluiceError, FailureAnswer and the
  // rest exist once and `instanceof` works across entries.
  entry: {
    index: 'src/index.ts',
    store: 'src/store/index.ts',
    concurrency: 'src/concurrency/index.ts',
    shedding: 'src/shedding/index.ts',
    config: 'src/config/index.ts',
    analytics: 'src/analytics/index.ts',
    internal: 'src/internal/index.ts',
  },
  format: ['esm', 'cjs'],
  splitting: true,
  dts: true,
  clean: true,
  sourcemap: true,
  target: 'es2022',
});
