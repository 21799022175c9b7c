// The build every package shares: ESM and CJS with type declarations and source maps, for ES2022, from
// src/index.ts. A package's tsup.config.ts passes only what it adds or changes (more entries, a plugin).

/**
 * @param {import('tsup').Options} [extra]
 * @returns {import('tsup').Options}
 */
export function library(extra = {}) {
  return {
    entry: ['src/index.ts'],
    format: ['esm', 'cjs'],
    dts: true,
    clean: true,
    sourcemap: true,
    target: 'es2022',
    ...extra,
  };
}
