// examples/cloudflare-hono-upstash: its start command runs worker.mjs in workerd (miniflare) against the Upstash
// REST fixture it starts itself, and prints a transcript. Runs `node start.mjs`, the command `pnpm start` ends with
// (the packages it imports are built before this suite runs, which is the other half of `pnpm start`).
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { expect, it } from 'vitest';
import { portIsClosed, requireRedisBinaries } from '../harness/redis.js';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '../..');
const exampleDir = join(root, 'examples/cloudflare-hono-upstash');

it('pnpm start: the worker in workerd allows a burst of 5, then 429 with RateLimit and Retry-After; another client is untouched; exits 0 and stops what it started', async () => {
  requireRedisBinaries();
  const pkg = JSON.parse(readFileSync(join(exampleDir, 'package.json'), 'utf8')) as { scripts: { start: string } };
  expect(pkg.scripts.start).toMatch(/&& node start\.mjs$/);

  const result = spawnSync(process.execPath, ['start.mjs'], { cwd: exampleDir, encoding: 'utf8', timeout: 50_000 });
  expect(result.error).toBeUndefined();
  expect(result.stderr).toBe('');
  const out = result.stdout;
  expect(result.status, out).toBe(0);

  const worker =
    /in workerd on http:\/\/127\.0\.0\.1:(\d+); Upstash REST fixture on http:\/\/127\.0\.0\.1:(\d+) \(redis-server on port (\d+)\)/.exec(
      out,
    );
  expect(worker, out).not.toBeNull();

  const rows = [...out.matchAll(/^ {1,2}\d+ {2}(\S+)\s+(\d{3})\s+(\S+)\s+(\S+)$/gm)].map((m) => ({
    client: m[1],
    status: Number(m[2]),
    rateLimit: m[3],
    retryAfter: m[4],
  }));
  expect(rows.map((r) => [r.client, r.status])).toEqual([
    ...Array.from({ length: 5 }, () => ['203.0.113.10', 200]),
    ['203.0.113.10', 429],
    ['203.0.113.10', 429],
    ['2001:db8::7', 200],
  ]);
  expect(rows.slice(0, 5).map((r) => /r=(\d)/.exec(r.rateLimit!)?.[1])).toEqual(['4', '3', '2', '1', '0']);
  for (const r of rows.slice(5, 7)) expect(Number(r.retryAfter)).toBeGreaterThan(0);

  expect(out).toContain('  HTTP 429');
  expect(out).toContain('  content-type: application/problem+json');
  expect(out).toMatch(/^ {2}ratelimit-policy: "api";q=5;w=\d+$/m);
  expect(out).toMatch(/^ {2}retry-after: \d+$/m);
  expect(out).toMatch(/"status":429/);
  expect(out).toContain('Refusals counted in Upstash by onLimited, in the background (ctx.waitUntil): 2');

  // workerd and the servers it started are gone.
  for (const port of worker!.slice(1).map(Number)) expect(await portIsClosed(port), `port ${port}`).toBe(true);
}, 60_000);
