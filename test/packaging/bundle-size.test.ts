// Issue 14: "keep the Upstash-on-Hono path under 15 kB gzipped". Measured as the user's worker ships it:
// bench/suites/bundles/hono-upstash.mjs (Hono + @sluice/hono + @sluice/upstash + @upstash/redis/cloudflare), bundled
// with esbuild from the built packages, minified, ESM, browser platform with the workerd/worker/browser conditions,
// everything inlined (hono and @upstash/redis included), gzip level 9. The same code as `pnpm bench bundles`
// (bench/suites/bundles/measure.mjs), so the test and the bench table cannot disagree.
//
// The target is NOT met today: 54,480 bytes gzipped (53.2 kB) on the day this was written; @upstash/redis is 76 kB
// of the 182 kB minified, @sluice/redis-script's Lua sources 33 kB, @sluice/http 26 kB, @sluice/core 23 kB,
// hono 20 kB. Until it is met, the 15 kB test is an `it.fails` (it fails the suite the day the bundle gets under
// 15 kB: make it a plain `it` then), and a ratchet keeps the bundle from growing past today's size plus 5%.
import { describe, expect, it } from 'vitest';
import { ENTRIES, HONO_UPSTASH_TARGET_BYTES, measureEntry, type BundleSize } from '../../bench/suites/bundles/measure.mjs';

const RATCHET_BYTES = Math.round(54_480 * 1.05);

let measured: Promise<BundleSize> | undefined;
const honoUpstash = () => (measured ??= measureEntry(ENTRIES.find((entry) => entry.name === 'hono+upstash')!));

const describeSize = ({ gzipBytes, minifiedBytes, byPackage }: BundleSize) =>
  `${gzipBytes} bytes gzipped (${minifiedBytes} minified); largest: ${byPackage
    .slice(0, 5)
    .map((p) => `${p.name} ${p.bytes}`)
    .join(', ')}`;

describe('the Upstash-on-Hono worker bundle (everything the worker ships)', () => {
  it('bundles hono, @sluice/hono, @sluice/http, @sluice/core, @sluice/upstash and @upstash/redis for the browser platform (a node:* import would fail the build)', async () => {
    const size = await honoUpstash();
    const names = size.byPackage.map((p) => p.name);
    expect(names).toEqual(expect.arrayContaining(['hono', '@sluice/hono', '@sluice/http', '@sluice/core', '@sluice/upstash', '@upstash/redis']));
  });

  it(`does not grow past today's size + 5% (${RATCHET_BYTES} bytes gzipped) while the 15 kB target is missed`, async () => {
    const size = await honoUpstash();
    expect(size.gzipBytes, describeSize(size)).toBeLessThanOrEqual(RATCHET_BYTES);
  });

  it.fails(`is under 15 kB gzipped (${HONO_UPSTASH_TARGET_BYTES} bytes), issue 14's target: NOT met today (54,480 bytes)`, async () => {
    const size = await honoUpstash();
    expect(size.gzipBytes, describeSize(size)).toBeLessThan(HONO_UPSTASH_TARGET_BYTES);
  });
});
