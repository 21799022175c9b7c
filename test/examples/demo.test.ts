// `pnpm demo` is the first thing the README asks a user to run: it must finish by itself, quickly, and show what
// it promises (progress, a per-client table, one 429 with its headers) with the limiter's guarantee intact.
import { spawnSync } from 'node:child_process';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { expect, it } from 'vitest';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '../..');

it('the demo runs against a real local server, prints its report and exits by itself within 12 s', () => {
  const started = Date.now();
  const result = spawnSync(process.execPath, [join(root, 'examples/demo/demo.mjs')], {
    cwd: root,
    encoding: 'utf8',
    timeout: 12_000,
  });
  const elapsedMs = Date.now() - started;
  expect(result.error).toBeUndefined();
  expect(result.stderr).toBe('');
  expect(result.status).toBe(0);
  expect(elapsedMs).toBeLessThan(12_000);
  const out = result.stdout;
  expect(out).toMatch(/server on http:\/\/127\.0\.0\.1:\d+/);
  expect(out).toMatch(/\[#{30}\]\s+96\/96 requests/);
  // The table: every client with requests = allowed + limited; the polite one is never limited, the flood is.
  const rows = new Map<string, [number, number, number]>();
  for (const match of out.matchAll(/^(alice|bob|carol \(cost 4\)|dave|\(no header\))\s+(\d+)\s+(\d+)\s+(\d+)$/gm)) {
    rows.set(match[1]!, [Number(match[2]), Number(match[3]), Number(match[4])]);
  }
  expect([...rows.keys()]).toEqual(['alice', 'bob', 'carol (cost 4)', 'dave', '(no header)']);
  for (const [sent, allowed, limited] of rows.values()) expect(allowed + limited).toBe(sent);
  expect(rows.get('alice')).toEqual([12, 12, 0]);
  expect(rows.get('(no header)')).toEqual([6, 6, 0]);
  // The flood gets the burst plus whatever refilled while it was being served; the per-minute rule caps it all.
  const [, daveAllowed, daveLimited] = rows.get('dave')!;
  expect(daveAllowed).toBeGreaterThanOrEqual(10);
  expect(daveAllowed).toBeLessThanOrEqual(20);
  expect(daveLimited).toBeGreaterThan(0);
  const [, bobAllowed, bobLimited] = rows.get('bob')!;
  expect(bobAllowed).toBeLessThanOrEqual(20);
  expect(bobLimited).toBeGreaterThanOrEqual(10);
  expect(out).toContain('HTTP 429 Too Many Requests');
  expect(out).toMatch(/RateLimit-Policy: "burst";q=10;w=2, "minute";q=20;w=60/);
  expect(out).toMatch(/RateLimit: "(burst|minute)";r=\d+;t=\d+/);
  expect(out).toMatch(/Retry-After: \d+/);
  expect(out).toContain('every client stayed within burst + rate x elapsed, and within 20 per minute');
});
