// Bundles each edge entry in this folder as a worker's deploy would (esbuild, ESM, minified, browser platform with
// the workerd/worker/browser conditions, everything inlined) and measures the result: minified bytes, gzipped
// bytes (zlib level 9), and which packages the minified bytes come from (esbuild's metafile). Shared by
// `pnpm bench bundles` and test/packaging/bundle-size.test.ts, so both measure the same thing.
import { gzipSync } from 'node:zlib';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { build } from 'esbuild';

const here = dirname(fileURLToPath(import.meta.url));

/** The Upstash-on-Hono target, 25 kB gzipped or less: everything the worker ships, Hono and the REST client included. */
export const HONO_UPSTASH_TARGET_BYTES = 25 * 1024;

/** Each entry: its file here, what it is, and the imports left out of the bundle (the platform provides them). */
export const ENTRIES = [
  { name: 'core', file: 'core.mjs', what: '@sluice/core, the whole root (export *)' },
  { name: 'core+memory', file: 'core-memory.mjs', what: 'a fetch handler: core + @sluice/memory' },
  { name: 'core+upstash', file: 'core-upstash.mjs', what: 'a fetch handler: core + @sluice/upstash on its own REST client' },
  { name: 'http', file: 'http-memory.mjs', what: 'a fetch handler: @sluice/http (createHandler, toResponse) + core + memory' },
  {
    name: 'hono+upstash',
    file: 'hono-upstash.mjs',
    what: 'a Hono worker: hono + @sluice/hono + @sluice/upstash on its own REST client ({ url, token })',
  },
  {
    name: 'hono+upstash, denyList',
    file: 'hono-upstash-deny.mjs',
    what: "the same worker enforcing the limiters' deny lists (denyList: matchDenyList): the matcher ships only then",
  },
  {
    name: 'hono+upstash, @sluice/* only',
    file: 'hono-upstash.mjs',
    what: 'the same worker with hono left out: what sluice adds to it',
    external: ['hono', 'hono/*'],
  },
  {
    name: 'hono+upstash, @upstash/redis',
    file: 'hono-upstash-redis.mjs',
    what: "the same worker on the user's @upstash/redis client (/cloudflare) in place of the own REST client",
  },
  {
    name: 'peer: hono+@upstash/ratelimit',
    file: 'peer-hono-upstash-ratelimit.mjs',
    what: 'the same Hono worker limited by @upstash/ratelimit (token bucket) on @upstash/redis/cloudflare, X-RateLimit-* headers and a 429 by hand',
  },
  {
    name: 'next middleware',
    file: 'next-middleware.mjs',
    what: '@sluice/next rateLimit on Upstash (next/* external: Next ships it)',
    external: ['next', 'next/*'],
  },
  { name: 'tiered', file: 'tiered-upstash.mjs', what: 'a fetch handler: @sluice/tiered over @sluice/upstash on its own REST client' },
];

/**
 * @param {{ file: string, external?: string[] }} entry
 * @returns {Promise<{ minifiedBytes: number, gzipBytes: number, byPackage: { name: string, bytes: number }[], text: string }>}
 */
export async function measureEntry(entry) {
  const result = await build({
    entryPoints: [join(here, entry.file)],
    bundle: true,
    minify: true,
    format: 'esm',
    platform: 'browser',
    target: 'es2022',
    conditions: ['workerd', 'worker', 'browser'],
    external: entry.external ?? [],
    metafile: true,
    write: false,
    logLevel: 'silent',
    legalComments: 'none',
  });
  const code = result.outputFiles[0].contents;
  const [output] = Object.values(result.metafile.outputs);
  const totals = new Map();
  for (const [input, { bytesInOutput }] of Object.entries(output.inputs)) {
    const name = packageOf(input);
    totals.set(name, (totals.get(name) ?? 0) + bytesInOutput);
  }
  const byPackage = [...totals]
    .map(([name, bytes]) => ({ name, bytes }))
    .filter((p) => p.bytes > 0)
    .sort((a, b) => b.bytes - a.bytes);
  return { minifiedBytes: code.length, gzipBytes: gzipSync(code, { level: 9 }).length, byPackage, text: new TextDecoder().decode(code) };
}

/** The package an input path belongs to: node_modules/<name> (pnpm's store included), or @sluice/<dir> in this repo. */
function packageOf(input) {
  const modules = input.lastIndexOf('node_modules/');
  if (modules >= 0) {
    const parts = input.slice(modules + 'node_modules/'.length).split('/');
    return parts[0].startsWith('@') ? `${parts[0]}/${parts[1]}` : parts[0];
  }
  const sluice = /(?:^|\/)packages\/(?:stores\/|frameworks\/)?([^/]+)\//.exec(input);
  if (sluice) return `@sluice/${sluice[1]}`;
  return 'entry';
}
