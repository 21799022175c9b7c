// examples/upstash-fetch: its start command serves handler.mjs (a web-standard fetch handler on @sluice/upstash)
// against the Upstash REST fixture it starts itself, over a throwaway redis-server, and prints a transcript. Runs
// `node start.mjs`, the command `pnpm start` ends with (the packages it imports are built before this suite runs,
// which is the other half of `pnpm start`).
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { expect, it } from 'vitest';
import { portIsClosed, requireRedisBinaries } from '../harness/redis.js';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '../..');
const exampleDir = join(root, 'examples/upstash-fetch');

it('pnpm start: alice gets a burst of 5, then 429 with Retry-After; bob keeps his own burst; one Upstash request per decision; exits 0 and stops what it started', async () => {
  requireRedisBinaries();
  const pkg = JSON.parse(readFileSync(join(exampleDir, 'package.json'), 'utf8')) as { scripts: { start: string } };
  expect(pkg.scripts.start).toMatch(/&& node start\.mjs$/);

  const result = spawnSync(process.execPath, ['start.mjs'], { cwd: exampleDir, encoding: 'utf8', timeout: 50_000 });
  expect(result.error).toBeUndefined();
  expect(result.stderr).toBe('');
  const out = result.stdout;
  expect(result.status, out).toBe(0);

  const servers =
    /^handler on http:\/\/127\.0\.0\.1:(\d+), Upstash REST fixture on http:\/\/127\.0\.0\.1:(\d+) \(redis-server on port (\d+)\)$/m.exec(
      out,
    );
  expect(servers, out).not.toBeNull();

  const rows = [...out.matchAll(/^ {0,2}(\d+) {2}(\w+)\s+(\d{3})\s+(\d+)\s+(\w+)\s+(\S+)$/gm)].map((m) => ({
    client: m[2],
    status: Number(m[3]),
    remaining: Number(m[4]),
    rule: m[5],
    retryAfter: m[6],
  }));
  expect(
    rows.map((r) => [r.client, r.status]),
    out,
  ).toEqual([
    ...Array.from({ length: 5 }, () => ['alice', 200]),
    ...Array.from({ length: 5 }, () => ['alice', 429]),
    ...Array.from({ length: 3 }, () => ['bob', 200]),
  ]);
  expect(rows.slice(0, 5).map((r) => r.remaining)).toEqual([4, 3, 2, 1, 0]);
  for (const r of rows.slice(5, 10)) expect([r.rule, r.retryAfter]).toEqual(['burst', '1']);
  expect(rows.slice(10).map((r) => r.remaining)).toEqual([4, 3, 2]);
  expect(out).toContain('8 of 13 requests allowed');
  // Compound rules, one HTTP request each: the README's "one Upstash request decides both".
  expect(out).toContain('Upstash REST requests: 13 for 13 decisions (13 EVALSHA).');

  // The handler's server, the fixture and its redis-server are gone.
  for (const port of servers!.slice(1).map(Number)) expect(await portIsClosed(port), `port ${port}`).toBe(true);
}, 60_000);
