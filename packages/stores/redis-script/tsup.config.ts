import { defineConfig } from 'tsup';
import { esbuildLuaPlugin } from './build/lua.mjs';

export default defineConfig({
  entry: ['src/index.ts'],
  format: ['esm', 'cjs'],
  dts: true,
  clean: true,
  sourcemap: true,
  target: 'es2022',
  // `virtual:sluice-lua`: src/lua assembled, with its SHA-1, at build time (build/lua.mjs).
  esbuildPlugins: [esbuildLuaPlugin()],
});
