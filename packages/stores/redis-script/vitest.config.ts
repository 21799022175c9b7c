import { defineConfig } from 'vitest/config';
import { withSourceMode } from '../../../scripts/vitest-sources.mjs';
import { viteLuaPlugin } from './build/lua.mjs';

// The tests import src/, whose `virtual:sluice-lua` the same build step serves as tsup does for dist/.
export default defineConfig(
  withSourceMode({
    plugins: [viteLuaPlugin()],
  }),
);
