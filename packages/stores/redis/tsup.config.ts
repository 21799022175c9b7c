import { defineConfig } from 'tsup';

export default defineConfig({
  // `scripts` is its own entry so that edge code (the Upstash store) can import the Lua without ioredis or Node.
  entry: { index: 'src/index.ts', scripts: 'src/scripts/index.ts' },
  format: ['esm', 'cjs'],
  dts: true,
  clean: true,
  sourcemap: true,
  target: 'es2022',
});
