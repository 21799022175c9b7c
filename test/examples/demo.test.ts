// `pnpm demo` is the first thing the README asks a user to run: it must finish by itself, quickly, and show what
// it promises (progress, a per-client table, one 429 with its headers) with the limiter's guarantee intact.
import { spawnSync } from 'node:child_process';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { expect, it } from 'vitest';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '../..');

it('the demo runs an Express app with @sluice/express on a real local server, prints its report and exits by itself within 12 s', () => {
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
  expect(out).toMatch(/Express app on http:\/\/127\.0\.0\.1:\d+, rateLimit\(\) middleware/);
  expect(out).toMatch(/\[#{30}\]\s+96\/96 requests/);
  // The table: every client with the identity the middleware resolved (the x-user header, else the socket
  // address) and requests = allowed + limited; the polite one is never limited, the flood is.
  const rows = new Map<string, [number, number, number]>();
  const identities = new Map<string, string>();
  for (const match of out.matchAll(/^(alice|bob|carol \(cost 4\)|dave|\(no header\))\s+(\S+)\s+(\d+)\s+(\d+)\s+(\d+)$/gm)) {
    identities.set(match[1]!, match[2]!);
    rows.set(match[1]!, [Number(match[3]), Number(match[4]), Number(match[5])]);
  }
  expect([...rows.keys()]).toEqual(['alice', 'bob', 'carol (cost 4)', 'dave', '(no header)']);
  expect([...identities.values()]).toEqual(['user:alice', 'user:bob', 'user:carol', 'user:dave', 'ip:127.0.0.1']);
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
  // The 429 as @sluice/http writes it: both rules of the compound limiter as named items, Retry-After no earlier
  // than the deciding rule's t, and a problem+json body.
  expect(out).toContain('HTTP 429 Too Many Requests');
  expect(out).toMatch(/^ {2}RateLimit-Policy: "demo\/burst";q=10;w=2, "demo\/minute";q=20;w=60$/m);
  const rateLimit = /^ {2}RateLimit: "demo\/burst";r=(\d+);t=(\d+), "demo\/minute";r=(\d+);t=(\d+)$/m.exec(out);
  expect(rateLimit).not.toBeNull();
  const retryAfter = Number(/^ {2}Retry-After: (\d+)$/m.exec(out)?.[1]);
  expect(retryAfter).toBeGreaterThanOrEqual(1);
  const [burstLeft, burstT, minuteLeft, minuteT] = rateLimit!.slice(1).map(Number);
  // One of the two rules refused: it has nothing left and its t is the Retry-After.
  expect((burstLeft === 0 && burstT! <= retryAfter) || (minuteLeft === 0 && minuteT! <= retryAfter)).toBe(true);
  expect(out).toMatch(/^ {2}Content-Type: application\/problem\+json/m);
  expect(out).toMatch(
    /^ {2}\{"type":"https:\/\/iana\.org\/assignments\/http-problem-types#quota-exceeded","title":"Too Many Requests","status":429,/m,
  );
  expect(out).toContain('every client stayed within burst + rate x elapsed, and within 20 per minute');
});
