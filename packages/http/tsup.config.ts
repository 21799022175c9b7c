import { defineConfig } from 'tsup';
import { library } from '../../scripts/tsup-preset.mjs';

// Each entry but `index` is a subpath, built from its folder's index.ts: `ip` is `@sluice/http/ip` (address parsing,
// CIDR ranges, forwarding chains), `fetch` is `@sluice/http/fetch` (the throttled fetch for outbound calls) and
// `adapter` is `@sluice/http/adapter` (the framework adapters' kit). Splitting puts the code entries share (the
// parsers, the RateLimit field reader) in chunks, in CJS too, so a bundle that imports two entries ships it once.
export default defineConfig(
  library({
    entry: { index: 'src/index.ts', ip: 'src/ip/index.ts', fetch: 'src/fetch/index.ts', adapter: 'src/adapter/index.ts' },
    splitting: true,
  }),
);
