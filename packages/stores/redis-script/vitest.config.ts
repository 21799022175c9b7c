import { defineConfig } from 'vitest/config';
import { viteLuaPlugin } from './build/lua.mjs';

// The tests import src/, whose `virtual:sluice-lua` the same build step serves as tsup does for dist/.
export default defineConfig({
  plugins: [viteLuaPlugin()],
});
