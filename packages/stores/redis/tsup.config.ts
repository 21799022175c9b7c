import { defineConfig } from 'tsup';

export default defineConfig({
  // `scripts` re-exports @sluice/redis-script, which owns the Lua, for code that imported it from here.
  entry: { index: 'src/index.ts', scripts: 'src/scripts/index.ts' },
  format: ['esm', 'cjs'],
  dts: true,
  clean: true,
  sourcemap: true,
  target: 'es2022',
});
