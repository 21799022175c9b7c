// examples/fastify-sqlite: its start command runs on a real SQLite file in a temp folder and a real HTTP server,
// and prints what the README promises. Runs `node start.mjs`, the command `pnpm start` ends with (the packages it
// imports are built before this suite runs, which is the other half of `pnpm start`).
import { spawnSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { expect, it } from 'vitest';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '../..');
const exampleDir = join(root, 'examples/fastify-sqlite');
const TIMEOUT_MS = 30_000;

it('pnpm start: per-route config, a shared route group, preHandler identity, state that survives a restart; exits 0', () => {
  const pkg = JSON.parse(readFileSync(join(exampleDir, 'package.json'), 'utf8')) as { scripts: { start: string } };
  expect(pkg.scripts.start).toMatch(/&& node start\.mjs$/);

  const result = spawnSync(process.execPath, ['start.mjs'], { cwd: exampleDir, encoding: 'utf8', timeout: TIMEOUT_MS });
  expect(result.error).toBeUndefined();
  expect(result.stderr).toBe('');
  const out = result.stdout;
  expect(result.status, out).toBe(0);
  expect(out).toContain('everything behaved as the README says');
  expect(out).toMatch(/rate-limit state in \S+app\.db \(journal mode wal\)/);

  // 1. Per-route config.
  expect(out).toMatch(/^ {2}GET \/health \(rateLimit: false\)\s+200\s+-\s+-\s+-$/m);
  expect(out).toMatch(/^ {2}GET \/api\/items \(the plugin default\)\s+200\s+"api";q=20;w=2\s+"api";r=19;t=1\s+-$/m);
  const logins = [
    ...out.matchAll(/^ {2}POST \/login #(\d) \(its own rules\)\s+(\d{3})\s+"login";q=3;w=900\s+"login";r=(\d);t=(\d+)\s+(\d+|-)$/gm),
  ];
  expect(logins.map((m) => m[2])).toEqual(['401', '401', '401', '429', '429']);
  expect(logins.map((m) => Number(m[3]))).toEqual([2, 1, 0, 0, 0]);
  for (const m of logins.slice(3)) {
    const retryAfter = Number(m[5]);
    expect(retryAfter).toBeGreaterThan(890);
    expect(retryAfter).toBeLessThanOrEqual(900);
    expect(Number(m[4])).toBeLessThanOrEqual(retryAfter);
  }
  expect(out).toMatch(
    /^ {2}HTTP 429\n {2}content-type: application\/problem\+json(; charset=utf-8)?\n {2}ratelimit-policy: "login";q=3;w=900\n {2}ratelimit: "login";r=0;t=\d+\n {2}retry-after: \d+\n {2}\{"type":"https:\/\/iana\.org\/assignments\/http-problem-types#quota-exceeded","title":"Too Many Requests","status":429,/m,
  );

  // 2. The group: one bucket of 5 drawn down by both routes, remaining counting down across them.
  const group = [...out.matchAll(/^ {2}(\d) {2}GET \/search\/(users|posts)\s+(\d{3})\s+"search";r=(\d);t=\d+$/gm)];
  expect(group.map((m) => m[2])).toEqual(['users', 'posts', 'users', 'posts', 'users', 'posts', 'users']);
  expect(group.slice(0, 5).map((m) => [m[3], Number(m[4])])).toEqual([
    ['200', 4],
    ['200', 3],
    ['200', 2],
    ['200', 1],
    ['200', 0],
  ]);
  expect(group[6]![3]).toBe('429'); // 1 refill per second: at most one of #6 and #7 passes on a very slow run

  // 3. preHandler: identity from the session the route's own preHandler found.
  expect(out).toMatch(/^ {2}alice \(token-alice\)\s+user:alice\s+200 200 200 429\s+"reports";r=0;t=\d+$/m);
  expect(out).toMatch(/^ {2}bob \(token-bob\)\s+user:bob\s+200 200\s+"reports";r=1;t=\d+$/m);
  expect(out).toMatch(/^ {2}no session\s+ip:127\.0\.0\.1\s+401 401 401 429\s+"reports";r=0;t=\d+$/m);

  // 4. The counter is in the file: the restarted app refuses the 6th attempt. The group is a single row.
  expect(out).toMatch(/^ {2}POST \/login #6: 429, RateLimit: "login";r=0;t=\d+, Retry-After: \d+$/m);
  const rows = [...out.matchAll(/^ {2}(sluice:\S+)\s+(\S+)\s+(?:\d+ s|expired.*)$/gm)].map((m) => `${m[1]} ${m[2]}`);
  expect(rows).toEqual([
    'sluice:api:{ip:127.0.0.1} tb',
    'sluice:login:{ip:127.0.0.1} swl:900000',
    'sluice:reports:{ip:127.0.0.1} swl:60000',
    'sluice:reports:{user:alice} swl:60000',
    'sluice:reports:{user:bob} swl:60000',
    'sluice:search:{ip:127.0.0.1} tb',
  ]);

  // The temp folder with the SQLite file is gone.
  const file = /rate-limit state in (\S+app\.db)/.exec(out)![1]!;
  expect(existsSync(dirname(file))).toBe(false);
}, 45_000);
