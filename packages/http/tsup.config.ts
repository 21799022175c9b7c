import { defineConfig } from 'tsup';
import { library } from '../../scripts/tsup-preset.mjs';

// `ip` is the `@sluice/http/ip` subpath (address parsing, CIDR ranges, forwarding chains), `fetch` is
// `@sluice/http/fetch` (the throttled fetch for outbound calls). Splitting puts the code entries share (the
// parsers, the RateLimit field reader) in chunks, in CJS too, so a bundle that imports two entries ships it once.
export default defineConfig(library({ entry: { index: 'src/index.ts', ip: 'src/ip-api.ts', fetch: 'src/fetch-api.ts' }, splitting: true }));
