// The size target: "keep the Upstash-on-Hono path under 15 kB gzipped". Measured as the user's worker ships it:
// bench/suites/bundles/hono-upstash.mjs (Hono + @sluice/hono + @sluice/upstash on its own REST client), bundled with
// esbuild from the built packages, minified, ESM, browser platform with the workerd/worker/browser conditions,
// everything inlined (hono included), gzip level 9. The same code as `pnpm bench bundles`
// (bench/suites/bundles/measure.mjs), so the test and the bench table cannot disagree.
//
// The target is NOT met: 35,618 bytes gzipped (34.8 kB) on the day this was written, down from 54,480 with
// @upstash/redis (76 kB minified alone) before the store had its own REST client, and with the Lua shipped
// compacted. Of the 101.1 kB minified: @sluice/http 26.2 kB, @sluice/redis-script 25.3 kB (18 kB of it Lua),
// @sluice/core 23.3 kB, hono 19.7 kB. Until the target is met, the 15 kB test is an `it.fails` (it fails the suite
// the day the bundle gets under 15 kB: make it a plain `it` then), a ratchet keeps the bundle from growing past
// today's size plus 5%, and the bundle must stay smaller than the same worker on @upstash/ratelimit.
import { describe, expect, it } from 'vitest';
import { ENTRIES, HONO_UPSTASH_TARGET_BYTES, measureEntry, type BundleSize } from '../../bench/suites/bundles/measure.mjs';

const RATCHET_BYTES = Math.round(35_618 * 1.05);

const measured = new Map<string, Promise<BundleSize>>();
const bundle = (name: string): Promise<BundleSize> => {
  let size = measured.get(name);
  if (size === undefined) measured.set(name, (size = measureEntry(ENTRIES.find((entry) => entry.name === name)!)));
  return size;
};
const honoUpstash = () => bundle('hono+upstash');

const describeSize = ({ gzipBytes, minifiedBytes, byPackage }: BundleSize) =>
  `${gzipBytes} bytes gzipped (${minifiedBytes} minified); largest: ${byPackage
    .slice(0, 5)
    .map((p) => `${p.name} ${p.bytes}`)
    .join(', ')}`;

describe('the Upstash-on-Hono worker bundle (everything the worker ships)', () => {
  it('bundles hono, @sluice/hono, @sluice/http, @sluice/core and @sluice/upstash for the browser platform (a node:* import would fail the build), and no @upstash/redis', async () => {
    const size = await honoUpstash();
    const names = size.byPackage.map((p) => p.name);
    expect(names).toEqual(expect.arrayContaining(['hono', '@sluice/hono', '@sluice/http', '@sluice/core', '@sluice/upstash', '@sluice/redis-script']));
    expect(names).not.toContain('@upstash/redis');
  });

  it('is smaller than the same worker on @upstash/ratelimit and @upstash/redis (bench/suites/bundles/peer-hono-upstash-ratelimit.mjs)', async () => {
    const [ours, peer] = [await honoUpstash(), await bundle('peer: hono+@upstash/ratelimit')];
    expect(peer.byPackage.map((p) => p.name)).toEqual(expect.arrayContaining(['hono', '@upstash/ratelimit', '@upstash/redis']));
    expect(ours.gzipBytes, `ours ${describeSize(ours)}; peer ${describeSize(peer)}`).toBeLessThan(peer.gzipBytes);
  });

  it(`does not grow past today's size + 5% (${RATCHET_BYTES} bytes gzipped) while the 15 kB target is missed`, async () => {
    const size = await honoUpstash();
    expect(size.gzipBytes, describeSize(size)).toBeLessThanOrEqual(RATCHET_BYTES);
  });

  it.fails(`is under 15 kB gzipped (${HONO_UPSTASH_TARGET_BYTES} bytes), the size target: NOT met today (35,618 bytes)`, async () => {
    const size = await honoUpstash();
    expect(size.gzipBytes, describeSize(size)).toBeLessThan(HONO_UPSTASH_TARGET_BYTES);
  });
});
