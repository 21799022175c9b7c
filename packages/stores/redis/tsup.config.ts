import { defineConfig } from 'tsup';
import { library } from '../../../scripts/tsup-preset.mjs';

export default defineConfig(library());
