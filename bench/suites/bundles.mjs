// Edge bundle sizes: each edge entry (bundles/*.mjs, a worker or middleware as a user writes it) bundled as a
// deploy would bundle it, minified and gzipped; see bundles/measure.mjs for how. Sizes, not speed: the rows are
// printed as a section, not as the timing table.
import { formatInteger } from '../lib/table.mjs';
import { target } from '../lib/report.mjs';
import { ENTRIES, HONO_UPSTASH_TARGET_BYTES, measureEntry } from './bundles/measure.mjs';

export const description = 'edge bundle sizes (esbuild, minified, gzip -9): core, memory, upstash, http, hono+upstash, next, tiered';
export const builds = [
  '@sluice/core',
  '@sluice/memory',
  '@sluice/upstash',
  '@sluice/http',
  '@sluice/hono',
  '@sluice/next',
  '@sluice/tiered',
];

const kB = (bytes) => `${(bytes / 1024).toFixed(1)} kB`;

/** @param {{ options: Record<string, string | true>, log: (line: string) => void }} context */
export async function run({ log }) {
  const measured = [];
  for (const entry of ENTRIES) {
    log(`bundling ${entry.name}`);
    measured.push({ ...entry, ...(await measureEntry(entry)) });
  }
  const sluiceShare = (m) => m.byPackage.filter((p) => p.name.startsWith('@sluice/')).reduce((n, p) => n + p.bytes, 0);
  const header = ['entry', 'minified', 'gzipped', '@sluice/* minified', 'largest parts (minified)'];
  const body = measured.map((m) => [
    m.name === 'hono+upstash' ? `${m.name} *` : m.name,
    kB(m.minifiedBytes),
    kB(m.gzipBytes),
    kB(sluiceShare(m)),
    m.byPackage
      .slice(0, 4)
      .map((p) => `${p.name} ${kB(p.bytes)}`)
      .join(', '),
  ]);
  const widths = header.map((h, i) => Math.max(h.length, ...body.map((cells) => cells[i].length)));
  const line = (cells) =>
    cells
      .map((cell, i) => (i === 0 || i === 4 ? cell.padEnd(widths[i]) : cell.padStart(widths[i])))
      .join('  ')
      .trimEnd();
  const hono = measured.find((m) => m.name === 'hono+upstash');
  const peer = measured.find((m) => m.name === 'peer: hono+@upstash/ratelimit');
  return {
    title:
      'Edge bundles: esbuild 0.27, ESM, minify, platform browser, conditions workerd/worker/browser, everything inlined; gzip is zlib level 9 (1 kB = 1024 bytes)',
    rows: [],
    sections: [
      { heading: 'Sizes', lines: [line(header), widths.map((w) => '-'.repeat(w)).join('  '), ...body.map(line)] },
      {
        heading: 'What each entry is (bench/suites/bundles/)',
        lines: measured.map((m) => `${m.name.padEnd(Math.max(...measured.map((e) => e.name.length)))}  ${m.file}: ${m.what}`),
      },
    ],
    targets: [
      target(
        `* the Upstash-on-Hono path (everything the worker ships, hono and the REST client included) at most ${kB(HONO_UPSTASH_TARGET_BYTES)} gzipped`,
        hono.gzipBytes,
        '<=',
        HONO_UPSTASH_TARGET_BYTES,
        (v) => `${kB(v)} (${formatInteger(v)} bytes)`,
      ),
    ],
    notes: [
      `hono+upstash against the same worker on @upstash/ratelimit: ${(hono.gzipBytes / peer.gzipBytes).toFixed(2)}x its gzipped size (${kB(hono.gzipBytes)} / ${kB(peer.gzipBytes)}), with client identity, standard headers and problem bodies the peer worker leaves to the user`,
      '"largest parts" comes from esbuild\'s metafile (bytes of each package in the minified output, before gzip).',
    ],
    data: {
      entries: measured.map(({ name, file, minifiedBytes, gzipBytes, byPackage }) => ({ name, file, minifiedBytes, gzipBytes, byPackage })),
    },
  };
}
