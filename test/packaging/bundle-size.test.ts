// The size target: the Upstash-on-Hono path at most 25 kB gzipped (HONO_UPSTASH_TARGET_BYTES). Measured as the
// user's worker ships it: bench/suites/bundles/hono-upstash.mjs (Hono + @sluice/hono + @sluice/upstash on its own
// REST client), bundled with esbuild from the built packages, minified, ESM, browser platform with the
// workerd/worker/browser conditions, everything inlined (hono included), gzip level 9. The same code as
// `pnpm bench bundles` (bench/suites/bundles/measure.mjs), so the test and the bench table cannot disagree.
//
// The target is NOT met: 36,291 bytes gzipped (35.4 kB) at the last measure, 13 bytes under the @upstash/ratelimit
// worker (36,304), after the deny list's entry-by-entry changes moved into a live list of @sluice/core/config that
// only watchConfig's workers ship (inside the limiter they took it to 36,931); 36,153 bytes on 2026-12-07, up from 35,222 on 2026-11-28 (core's part of
// the worker grew from 24.6 to 27.3 kB minified with the one duration grammar, the deny list's own mode and the
// limiter's memory-first seam), and down from 54,480 with @upstash/redis (76 kB minified alone) before the store had
// its own REST client, the Lua shipped compacted, squeezed and with short local names, and the lease script only in
// upstashLeaseStore(). Of the 98.1 kB minified: @sluice/http 28.3 kB, @sluice/core 27.3 kB, hono 19.7 kB,
// @sluice/redis-script 16.3 kB (9.1 kB of it Lua). Until the target is met, the
// target test is an `it.fails` (it fails the suite the day the bundle meets it: make it a plain `it` then), a
// ratchet keeps the bundle from growing past that size plus 1%, and the bundle must stay smaller than the same
// worker on @upstash/ratelimit.
import { describe, expect, it } from 'vitest';
import { ENTRIES, HONO_UPSTASH_TARGET_BYTES, measureEntry, type BundleSize } from '../../bench/suites/bundles/measure.mjs';

const MEASURED_BYTES = 36_153;
const RATCHET_BYTES = Math.round(MEASURED_BYTES * 1.01);
const TARGET = `${HONO_UPSTASH_TARGET_BYTES / 1024} kB`;

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
    expect(names).toEqual(
      expect.arrayContaining(['hono', '@sluice/hono', '@sluice/http', '@sluice/core', '@sluice/upstash', '@sluice/redis-script']),
    );
    expect(names).not.toContain('@upstash/redis');
  });

  it('is smaller than the same worker on @upstash/ratelimit and @upstash/redis (bench/suites/bundles/peer-hono-upstash-ratelimit.mjs)', async () => {
    const [ours, peer] = [await honoUpstash(), await bundle('peer: hono+@upstash/ratelimit')];
    expect(peer.byPackage.map((p) => p.name)).toEqual(expect.arrayContaining(['hono', '@upstash/ratelimit', '@upstash/redis']));
    expect(ours.gzipBytes, `ours ${describeSize(ours)}; peer ${describeSize(peer)}`).toBeLessThan(peer.gzipBytes);
  });

  it("ships the deny list's matcher only when the worker passes denyList: matchDenyList", async () => {
    // A message only the matcher (packages/http/src/deny-list.ts) builds.
    const marker = 'looks like an IP address but is neither';
    const [plain, enforcing] = [await honoUpstash(), await bundle('hono+upstash, denyList')];
    expect(enforcing.text).toContain(marker);
    expect(plain.text).not.toContain(marker);
    expect(enforcing.gzipBytes).toBeGreaterThan(plain.gzipBytes);
  });

  it('ships no lease script with upstashStore() (only upstashLeaseStore() needs it)', async () => {
    const { LEASE_SCRIPT, LIMIT_SCRIPT } = await import('@sluice/redis-script');
    const { text } = await honoUpstash();
    expect(text).toContain(LIMIT_SCRIPT.slice(0, 120));
    expect(text).not.toContain(LEASE_SCRIPT.slice(0, 120));
  });

  it('holds one copy of the option checks every sluice package shares (@sluice/core/internal), not one per package', async () => {
    // Messages only rejectUnknownOptions and durationOption build (packages/core/src/shared/validate.ts, shared/duration.ts).
    const { text } = await honoUpstash();
    expect(text.split('accepted options are').length - 1).toBe(1);
    expect(text.split('a whole number of ms or a string like').length - 1).toBe(1);
  });

  it(`does not grow past its measured size + 1% (${RATCHET_BYTES} bytes gzipped) while the ${TARGET} target is missed`, async () => {
    const size = await honoUpstash();
    expect(size.gzipBytes, describeSize(size)).toBeLessThanOrEqual(RATCHET_BYTES);
  });

  it.fails(
    `is at most ${TARGET} gzipped (${HONO_UPSTASH_TARGET_BYTES} bytes), the size target: NOT met (${MEASURED_BYTES} bytes when measured)`,
    async () => {
      const size = await honoUpstash();
      expect(size.gzipBytes, describeSize(size)).toBeLessThanOrEqual(HONO_UPSTASH_TARGET_BYTES);
    },
  );
});
