// examples/tiered-fleet: its start command runs four app processes behind a round-robin proxy against a
// redis-server it starts itself, once per @sluice/tiered strategy, and prints what the README promises. Runs
// `node start.mjs`, the command `pnpm start` ends with (the packages it imports are built before this suite runs,
// which is the other half of `pnpm start`).
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { expect, it } from 'vitest';
import { portIsClosed, requireRedisBinaries } from '../harness/redis.js';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '../..');
const exampleDir = join(root, 'examples/tiered-fleet');
const TIMEOUT_MS = 40_000;
const LIMIT = 100;
const STRATEGIES = ['deny-cache', 'lease', 'async'] as const;

function processIsGone(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return false;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'ESRCH';
  }
}

interface Run {
  requests: number;
  apps: { name: string; viaProxy: number; ok: number; limited: number; hotOk: number; remoteCalls: number; degraded: number }[];
  fleet: { viaProxy: number; ok: number; limited: number; remoteCalls: number };
  scriptCalls: number;
  remoteCalls: number;
  windows: { whole: boolean; admitted: number }[];
  pids: number[];
}

/** One strategy's section of the output, from its `== strategy` line to the blank line after it. */
function section(out: string, strategy: string): Run {
  const start = out.indexOf(`== strategy '${strategy}': `);
  expect(start, `no section for '${strategy}'`).toBeGreaterThanOrEqual(0);
  const text = out.slice(start, out.indexOf('\n\n', start));
  const row = /^ {2}(app-[1-4]|fleet)\s+(\d+)\s+(\d+)\s+(\d+)\s+(\d+)\s+(\d+)\s+(\d+)\s+(\d+)\s+(\d+)\s+\d+ \/ \d+/gm;
  const rows = [...text.matchAll(row)].map((m) => ({
    name: m[1]!,
    viaProxy: Number(m[2]),
    ok: Number(m[3]),
    limited: Number(m[4]),
    hotOk: Number(m[5]),
    remoteCalls: Number(m[8]),
    degraded: Number(m[9]),
  }));
  const redis = /^ {2}Redis: (\d+) script calls for (\d+) requests; remoteCalls summed over the processes: (\d+)$/m.exec(text);
  expect(redis, text).not.toBeNull();
  const windows = [...text.matchAll(/^ {2}\d\d:\d\d:\d\d\.\d{3}-\d\d:\d\d:\d\d\.\d{3}( \(tail\))?\s+(\d+)\s+(?:ok|OVER)/gm)].map((m) => ({
    whole: m[1] === undefined,
    admitted: Number(m[2]),
  }));
  const pids = [...text.matchAll(/app-[1-4] \(pid (\d+)\) exit code 0/g)].map((m) => Number(m[1]));
  return {
    requests: Number(/^== strategy '[^']+': (\d+) requests/.exec(text)?.[1]),
    apps: rows.filter((r) => r.name !== 'fleet'),
    fleet: rows.find((r) => r.name === 'fleet')!,
    scriptCalls: Number(redis![1]),
    remoteCalls: Number(redis![3]),
    windows,
    pids,
  };
}

it('pnpm start: four processes share one limit through the tier, per strategy, then everything stops and it exits 0', async () => {
  requireRedisBinaries();
  const pkg = JSON.parse(readFileSync(join(exampleDir, 'package.json'), 'utf8')) as { scripts: { start: string } };
  expect(pkg.scripts.start).toMatch(/&& node start\.mjs$/);

  const startedAt = Date.now();
  const result = spawnSync(process.execPath, ['start.mjs'], { cwd: exampleDir, encoding: 'utf8', timeout: TIMEOUT_MS });
  expect(result.error).toBeUndefined();
  expect(result.stderr).toBe('');
  const out = result.stdout;
  expect(result.status, out).toBe(0);
  expect(Date.now() - startedAt).toBeLessThan(TIMEOUT_MS);
  expect(out).toContain('everything behaved as the README says');
  expect(out).toContain(`rule: fixedWindow({ limit: ${LIMIT}, window: 1000 ms }) per identity, enforced by 4 app processes together`);

  const runs = new Map(STRATEGIES.map((strategy) => [strategy, section(out, strategy)]));
  for (const [strategy, run] of runs) {
    // Four processes, the proxy's round robin spreading the requests evenly, every request answered 200 or 429.
    expect(
      run.apps.map((a) => a.name),
      strategy,
    ).toEqual(['app-1', 'app-2', 'app-3', 'app-4']);
    expect(run.fleet.viaProxy, strategy).toBe(run.requests);
    expect(run.fleet.ok + run.fleet.limited, strategy).toBe(run.requests);
    for (const app of run.apps) {
      expect(Math.abs(app.viaProxy - run.requests / 4), `${strategy} ${app.name}`).toBeLessThanOrEqual(1);
      expect(app.degraded, `${strategy} ${app.name}: Redis was up, nothing degraded`).toBe(0);
    }
    // The hot identity was pushed well over its limit, and Redis saw fewer calls than there were requests.
    expect(run.requests, strategy).toBeGreaterThan(4 * LIMIT);
    expect(run.fleet.limited, strategy).toBeGreaterThan(0);
    expect(run.remoteCalls, strategy).toBeLessThan(run.requests);
    expect(run.remoteCalls, strategy).toBe(run.apps.reduce((a, b) => a + b.remoteCalls, 0));
    // Per window of the Redis clock: two whole windows of traffic (and maybe a tail of requests still in flight).
    const whole = run.windows.filter((w) => w.whole);
    expect(whole.length, strategy).toBe(2);
    for (const w of whole) expect(w.admitted, strategy).toBeGreaterThan(0);
    // Each process exited by itself after tier.close(), and is gone.
    expect(run.pids, strategy).toHaveLength(4);
    for (const pid of run.pids) expect(processIsGone(pid), `${strategy}: pid ${pid} is gone`).toBe(true);
  }

  // deny-cache and lease never let the fleet admit more than the limit for the hot identity in any window.
  for (const strategy of ['deny-cache', 'lease'] as const) {
    for (const w of runs.get(strategy)!.windows) expect(w.admitted, strategy).toBeLessThanOrEqual(LIMIT);
  }
  // deny-cache is exact: a hot identity far over the limit gets exactly the limit in every whole window.
  for (const w of runs.get('deny-cache')!.windows.filter((x) => x.whole)) expect(w.admitted).toBe(LIMIT);
  // deny-cache still sends every admitted request to Redis; lease answers nearly everything locally.
  expect(runs.get('deny-cache')!.remoteCalls).toBeGreaterThanOrEqual(runs.get('deny-cache')!.fleet.ok);
  const lease = runs.get('lease')!;
  expect(lease.scriptCalls * 5, `lease: ${lease.scriptCalls} Redis script calls for ${lease.requests} requests`).toBeLessThan(
    lease.requests,
  );
  expect(lease.remoteCalls * 5).toBeLessThan(lease.requests);
  // async may over-admit, within its stated bound: limit + instances × maxUnsynced (4 × 20).
  for (const w of runs.get('async')!.windows) expect(w.admitted).toBeLessThanOrEqual(LIMIT + 4 * 20);

  // The redis-server it started is gone.
  const redisPort = Number(/redis-server \S+ on 127\.0\.0\.1:(\d+) \(pid \d+, started by this script\)/.exec(out)?.[1]);
  expect(redisPort).toBeGreaterThan(0);
  expect(await portIsClosed(redisPort)).toBe(true);
  const redisPid = Number(/redis-server \S+ on 127\.0\.0\.1:\d+ \(pid (\d+), started by this script\)/.exec(out)?.[1]);
  expect(processIsGone(redisPid)).toBe(true);
}, 60_000);
