#!/usr/bin/env node
// One command, `pnpm start` (or `node start.mjs` once the packages are built): starts a throwaway redis-server and
// the local Upstash REST fixture in front of it, bundles worker.mjs as wrangler would (esbuild, ESM, the workerd
// conditions), runs it in workerd through miniflare on 127.0.0.1, sends a burst from two clients, prints what each
// request got, then stops everything and exits.
import { upstashRest } from '@sluice/upstash';
import { build } from 'esbuild';
import { Miniflare } from 'miniflare';
import { startFixtureProcess } from '../../test/harness/upstash-fixture-process.mjs';

const COMPATIBILITY_DATE = '2026-07-01'; // as in wrangler.toml

const fixture = await startFixtureProcess({ loader: import.meta.resolve('tsx') });
let mf;
try {
  const bundle = await build({
    entryPoints: [new URL('./worker.mjs', import.meta.url).pathname],
    bundle: true,
    format: 'esm',
    platform: 'browser',
    conditions: ['workerd', 'worker', 'browser'],
    write: false,
    logLevel: 'error',
  });
  mf = new Miniflare({
    modules: true,
    script: bundle.outputFiles[0].text,
    compatibilityDate: COMPATIBILITY_DATE,
    host: '127.0.0.1',
    port: 0,
    // What `wrangler secret put` would provide on Cloudflare.
    bindings: { UPSTASH_REDIS_REST_URL: fixture.url, UPSTASH_REDIS_REST_TOKEN: fixture.token },
  });
  let url;
  try {
    url = await mf.ready;
  } catch (error) {
    throw new Error(
      `workerd did not start through miniflare: ${error.message}. It ships in the workerd npm package: run pnpm install at the repository root`,
    );
  }
  const bundleKb = (bundle.outputFiles[0].contents.length / 1024).toFixed(0);
  console.log(
    `worker.mjs (${bundleKb} kB bundled, not minified) in workerd on ${url.origin}; Upstash REST fixture on ${fixture.url} (redis-server on port ${fixture.redisPort})\n`,
  );

  // Two clients, as Cloudflare's edge would name them in CF-Connecting-IP.
  const burst = [...Array(7).fill('203.0.113.10'), '2001:db8::7'];
  console.log('  #  client (CF-Connecting-IP)  status  RateLimit                         Retry-After');
  let refused;
  for (const [i, client] of burst.entries()) {
    const response = await fetch(new URL('/api/hello', url), { headers: { 'cf-connecting-ip': client } });
    const body = await response.text();
    if (response.status === 429) refused ??= { response, body };
    const rateLimit = response.headers.get('ratelimit') ?? '-';
    const retryAfter = response.headers.get('retry-after') ?? '-';
    console.log(
      `${String(i + 1).padStart(3)}  ${client.padEnd(24)}  ${String(response.status).padEnd(6)}  ${rateLimit.padEnd(32)}  ${retryAfter}`,
    );
  }

  if (refused === undefined) throw new Error('no request was refused: the limiter did not limit');
  console.log('\nThe first 429, in full:');
  console.log(`  HTTP ${refused.response.status}`);
  for (const [name, value] of refused.response.headers) console.log(`  ${name}: ${value}`);
  console.log(`\n  ${refused.body}`);

  // onLimited ran after each refusal was sent, kept alive by ctx.waitUntil; give the last one a moment to land.
  const redis = upstashRest({ url: fixture.url, token: fixture.token });
  let logged = 0;
  for (let i = 0; i < 50 && logged < 2; i++) {
    const keys = /** @type {string[]} */ (await redis.command(['KEYS', 'refusals:*']));
    logged = keys.length === 0 ? 0 : /** @type {string[]} */ (await redis.command(['MGET', ...keys])).reduce((n, v) => n + Number(v), 0);
    if (logged < 2) await new Promise((resolve) => setTimeout(resolve, 100));
  }
  console.log(`\nRefusals counted in Upstash by onLimited, in the background (ctx.waitUntil): ${logged}`);
  console.log('203.0.113.10 got its burst of 5 then 429s; 2001:db8::7 was untouched by it.');
} finally {
  await mf?.dispose();
  await fixture.stop();
}
