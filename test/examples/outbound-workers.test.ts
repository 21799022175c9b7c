// examples/outbound-workers: its start command runs 8 worker processes against a mock third party that allows 10
// requests per second, through limiter.schedule on a redis-server it starts itself, and prints what the third party
// saw. Runs `node start.mjs`, the command `pnpm start` ends with (the packages it imports are built before this
// suite runs, which is the other half of `pnpm start`).
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { expect, it } from 'vitest';
import { portIsClosed, requireRedisBinaries } from '../harness/redis.js';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '../..');
const exampleDir = join(root, 'examples/outbound-workers');
const TIMEOUT_MS = 40_000;
const LIMIT = 10;
const CALLS = 64; // 8 workers x 8 calls

it('pnpm start: 8 workers share 10 requests per second, waiting for their turn; no second over 10, no 429, exits 0', async () => {
  requireRedisBinaries();
  const pkg = JSON.parse(readFileSync(join(exampleDir, 'package.json'), 'utf8')) as { scripts: { start: string } };
  expect(pkg.scripts.start).toMatch(/&& node start\.mjs$/);

  const started = Date.now();
  const result = spawnSync(process.execPath, ['start.mjs'], { cwd: exampleDir, encoding: 'utf8', timeout: TIMEOUT_MS });
  expect(result.error).toBeUndefined();
  expect(result.stderr).toBe('');
  const out = result.stdout;
  expect(result.status, out).toBe(0);
  expect(Date.now() - started).toBeLessThan(30_000);
  expect(out).toContain('everything behaved as the README says');

  // The per-second table: every second at most 10, every request answered 200.
  const seconds = [...out.matchAll(/^ {2}(\d+)\s+(\d+)\s+(\d+)\s+(\d+)(?:\s+\(partly covered\))?$/gm)].map((m) => ({
    second: Number(m[1]),
    requests: Number(m[2]),
    ok: Number(m[3]),
    rejected: Number(m[4]),
  }));
  expect(seconds.length).toBeGreaterThanOrEqual(6);
  expect(seconds.map((s) => s.second)).toEqual(seconds.map((_, i) => i + 1));
  for (const s of seconds) {
    expect(s.requests, `second ${s.second}`).toBeLessThanOrEqual(LIMIT);
    expect(s.rejected, `second ${s.second}`).toBe(0);
    expect(s.ok + s.rejected).toBe(s.requests);
  }
  // The full seconds (not the first nor the last) run at the limit, less the margin: 9 or 10.
  for (const s of seconds.slice(1, -1)) expect(s.requests, `second ${s.second}`).toBeGreaterThanOrEqual(LIMIT - 1);
  const total = /^ {2}total\s+(\d+)\s+(\d+)\s+(\d+)$/m.exec(out);
  expect(total?.slice(1).map(Number)).toEqual([CALLS, CALLS, 0]);
  expect(seconds.reduce((n, s) => n + s.requests, 0)).toBe(CALLS);

  // About 10 per second from the first request to the last: n requests span about (n - 1) / 10 s.
  const span = /^(\d+) requests from the first to the last in ([\d.]+) s: [\d.]+ per second; 429s: (\d+) \(expected 0\)$/m.exec(out);
  expect(span).not.toBeNull();
  expect(Number(span![1])).toBe(CALLS);
  expect(Number(span![3])).toBe(0);
  const rate = (CALLS - 1) / Number(span![2]);
  expect(rate).toBeGreaterThan(LIMIT * 0.9);
  expect(rate).toBeLessThanOrEqual(LIMIT);

  // Every worker made its 8 calls, none refused.
  const workers = [...out.matchAll(/^ {2}worker-(\d)\s+(\d+)\s+(\d+)\s+(\d+)\s+[\d.]+ s$/gm)];
  expect(workers.map((m) => [Number(m[2]), Number(m[3]), Number(m[4])])).toEqual(Array.from({ length: 8 }, () => [8, 8, 0]));

  // The redis-server it started is gone.
  const redisPort = Number(/redis-server \S+ on 127\.0\.0\.1:(\d+) \(started by this script\)/.exec(out)?.[1]);
  expect(redisPort).toBeGreaterThan(0);
  expect(await portIsClosed(redisPort)).toBe(true);
}, 60_000);
