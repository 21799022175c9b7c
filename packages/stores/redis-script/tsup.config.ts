import { defineConfig } from 'tsup';
import { library } from '../../../scripts/tsup-preset.mjs';
import { esbuildLuaPlugin } from './build/lua.mjs';

// `virtual:sluice-lua`: src/lua assembled, with its SHA-1, at build time (build/lua.mjs).
export default defineConfig(library({ esbuildPlugins: [esbuildLuaPlugin()] }));
