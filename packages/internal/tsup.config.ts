import { defineConfig } from 'tsup';
import { library } from '../../scripts/tsup-preset.mjs';

// Only re-exports of @sluice/core/internal, left as imports of @sluice/core (a dependency): see src/index.ts.
export default defineConfig(library());
