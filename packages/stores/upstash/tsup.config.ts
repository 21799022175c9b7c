import { defineConfig } from 'tsup';

export default defineConfig({
  entry: ['src/index.ts'],
  format: ['esm', 'cjs'],
  dts: true,
  clean: true,
  sourcemap: true,
  target: 'es2022',
  // The Lua executor comes from @sluice/redis/scripts and is bundled in at build time, so installing this
  // package never pulls @sluice/redis (and its ioredis peer) into an edge bundle or a serverless install.
  noExternal: [/^@sluice\/redis(\/|$)/],
});
