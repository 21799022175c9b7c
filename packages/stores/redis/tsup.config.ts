import { defineConfig } from 'tsup';
import { library } from '../../../scripts/tsup-preset.mjs';

// `scripts` re-exports @sluice/redis-script, which owns the Lua, for code that imported it from here.
export default defineConfig(library({ entry: { index: 'src/index.ts', scripts: 'src/scripts/index.ts' } }));
