import { defineConfig } from 'tsup';
import { library } from '../../scripts/tsup-preset.mjs';

// `ip` is the `@sluice/http/ip` subpath (address parsing, CIDR ranges, forwarding chains). Splitting puts the
// parsers both entries use in one chunk, in CJS too, so a bundle that imports both ships them once.
export default defineConfig(library({ entry: { index: 'src/index.ts', ip: 'src/ip-api.ts' }, splitting: true }));
