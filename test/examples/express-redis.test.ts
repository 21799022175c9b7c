// examples/express-redis: its start command runs against a redis-server it starts itself, and prints what the
// README promises. Runs `node start.mjs`, the command `pnpm start` ends with (the packages it imports are built
// before this suite runs, which is the other half of `pnpm start`).
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { expect, it } from 'vitest';
import { portIsClosed, requireRedisBinaries } from '../harness/redis.js';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '../..');
const exampleDir = join(root, 'examples/express-redis');
const TIMEOUT_MS = 40_000;

it('pnpm start: per-route limits, a trusted proxy, fail-open and fail-closed through a Redis outage, then exits 0', async () => {
  requireRedisBinaries();
  const pkg = JSON.parse(readFileSync(join(exampleDir, 'package.json'), 'utf8')) as { scripts: { start: string } };
  expect(pkg.scripts.start).toMatch(/&& node start\.mjs$/);

  const result = spawnSync(process.execPath, ['start.mjs'], { cwd: exampleDir, encoding: 'utf8', timeout: TIMEOUT_MS });
  expect(result.error).toBeUndefined();
  expect(result.stderr).toBe('');
  const out = result.stdout;
  expect(result.status, out).toBe(0);
  expect(out).toContain('everything behaved as the README says');

  // 1. /api: a burst of 10 then 429 for a user and for an anonymous address; a second user behind that same
  // address has a bucket of his own.
  const api = new Map<string, { identity: string; ok: number; limited: number }>();
  for (const m of out.matchAll(/^ {2}(alice|anonymous|bob)\s+(\S+)\s+(\d+)\s+(\d+)\s+(\d+)\s+"api";r=\d+;t=\d+$/gm)) {
    expect(Number(m[4]) + Number(m[5])).toBe(Number(m[3]));
    api.set(m[1]!, { identity: m[2]!, ok: Number(m[4]), limited: Number(m[5]) });
  }
  expect(api.get('alice')).toMatchObject({ identity: 'user:alice' });
  expect(api.get('anonymous')).toMatchObject({ identity: 'ip:198.51.100.23' });
  expect(api.get('bob')).toEqual({ identity: 'user:bob', ok: 3, limited: 0 });
  for (const who of ['alice', 'anonymous'] as const) {
    // 14 requests sent one after another at 5/s refill: the burst of 10, plus at most what refilled meanwhile.
    expect(api.get(who)!.ok).toBeGreaterThanOrEqual(10);
    expect(api.get(who)!.ok).toBeLessThanOrEqual(12);
    expect(api.get(who)!.limited).toBeGreaterThan(0);
  }

  // 2. /login: 3 attempts, then 429 even with a fresh forged X-Forwarded-For entry each time.
  const login = [...out.matchAll(/^ {2}([1-6])\s+((?:192\.0\.2\.\d, )?203\.0\.113\.7)\s+(\d{3})\s+"login";r=(\d);t=(\d+)\s+(\d+|-)$/gm)];
  expect(login.map((m) => m[3])).toEqual(['401', '401', '401', '429', '429', '429']);
  expect(login.map((m) => Number(m[4]))).toEqual([2, 1, 0, 0, 0, 0]);
  expect(login.slice(3).map((m) => m[2])).toEqual(['192.0.2.4, 203.0.113.7', '192.0.2.5, 203.0.113.7', '192.0.2.6, 203.0.113.7']);
  for (const m of login.slice(3)) {
    const retryAfter = Number(m[6]);
    expect(retryAfter).toBeGreaterThan(890); // 15 minutes from the first attempt, less the run so far
    expect(retryAfter).toBeLessThanOrEqual(900);
    expect(Number(m[5])).toBeLessThanOrEqual(retryAfter);
  }
  expect(out).toMatch(/^ {2}alice\s+198\.51\.100\.10\s+401\s+"login";r=2;t=\d+\s+-$/m);
  // The 429 in full, as @sluice/http writes it.
  expect(out).toMatch(
    /^ {2}HTTP 429\n {2}content-type: application\/problem\+json\n {2}ratelimit-policy: "login";q=3;w=900\n {2}ratelimit: "login";r=0;t=\d+\n {2}retry-after: \d+\n {2}\{"type":"https:\/\/iana\.org\/assignments\/http-problem-types#quota-exceeded","title":"Too Many Requests","status":429,/m,
  );

  // 3. Redis killed: /api fails open (200, degraded, no counts), /login fails closed (503, Retry-After: 1), and the
  // api limiter's breaker opens after 5 failures.
  expect(out.match(/^ {2}GET \/api\/items \(alice\)\s+200\s+degraded: true\s+-\s+-$/gm)).toHaveLength(6);
  expect(out.match(/^ {2}POST \/login \(198\.51\.100\.77\)\s+503\s+Service Unavailable\s+-\s+1$/gm)).toHaveLength(2);
  expect(out).toMatch(
    /onError saw: api STORE_ERROR x5, api CIRCUIT_OPEN x1, login STORE_ERROR x2; circuit breakers: api open, login closed/,
  );

  // 4. Redis back: exact decisions with RateLimit counts again.
  expect(out).toMatch(
    /exact decisions again \d+ ms after the restart began: GET \/api\/items \(alice\) 200, degraded: false, RateLimit: "api";r=9;t=\d+/,
  );

  // The redis-server it started is gone.
  const redisPort = Number(/redis-server \S+ on 127\.0\.0\.1:(\d+) \(started by this script\)/.exec(out)?.[1]);
  expect(redisPort).toBeGreaterThan(0);
  expect(await portIsClosed(redisPort)).toBe(true);
}, 60_000);
