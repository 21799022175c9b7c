/**
 * The deny list has its own mode, apart from the limiter's: two worker processes (deny-worker.mjs) on one
 * redis-server, each serving HTTP through @sluice/http with watchConfig applying the stored configuration. With a
 * client on the list (added by the real CLI):
 * - the kill switch (`sluice config off`) and a dark launch of the limits (`sluice config shadow`) leave it refused
 *   with 403 by every process, while other clients are served;
 * - `sluice config deny mode shadow` serves it and reports it to onDenied with `shadow: true`; `deny mode off` serves
 *   it unreported; the dashboard's API sets the deny mode back to enforce, and it is refused again.
 */
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { startRedis, type RedisServer } from '../harness/redis.js';
import {
  sluice,
  startDashboard,
  startWorkers,
  statusFor,
  stopWorkers,
  untilEvery,
  type DashboardProcess,
  type FleetWorker,
} from './deny-fleet.js';

let server: RedisServer;
let workers: FleetWorker[] = [];
let dashboard: DashboardProcess | undefined;

const config = (...args: string[]) => sluice(['config', ...args, '--name', 'api', '--redis', `redis://127.0.0.1:${server.port}`]);

async function statuses(user: string): Promise<number[]> {
  return Promise.all(workers.map((worker) => statusFor(worker, user)));
}

beforeAll(async () => {
  server = await startRedis();
  workers = await startWorkers(server.port, 2);
});

afterAll(async () => {
  await dashboard?.stop();
  await stopWorkers(workers);
  await server?.stop();
});

describe('the deny list under the kill switch and its own mode', () => {
  test('a listed client stays refused with 403 by every process when the limiter is off or in shadow', async () => {
    const added = await config('deny', 'add', 'user:scraper', '--reason', 'scraper');
    expect(added.code, added.stderr).toBe(0);
    await untilEvery(workers, (s) => s.deny.includes('user:scraper'), 'applied the deny entry');
    expect(await statuses('scraper')).toEqual([403, 403]);

    for (const command of ['off', 'shadow']) {
      const flipped = await config(command);
      expect(flipped.code, flipped.stderr).toBe(0);
      const mode = command === 'off' ? 'off' : 'shadow';
      const states = await untilEvery(workers, (s) => s.mode === mode, `switched to mode ${mode}`);
      expect(states.map((s) => s.denyMode)).toEqual(['enforce', 'enforce']);
      expect(await statuses('scraper'), `limiter mode ${mode}`).toEqual([403, 403]);
      expect(await statuses('alice')).toEqual([200, 200]);
    }
    for (const state of await untilEvery(workers, () => true, 'answered')) {
      expect(state.denied.every((event) => !event.shadow && event.reason === 'scraper')).toBe(true);
      expect([state.errors, state.unhandled]).toEqual([[], 0]);
    }
  });

  test('deny mode shadow (CLI) serves the listed client and reports it; off serves it unreported; the dashboard sets enforce again', async () => {
    const shadow = await config('deny', 'mode', 'shadow');
    expect(shadow.code, shadow.stderr).toBe(0);
    expect(shadow.stderr).toContain('deny list shadow');
    expect(JSON.parse(shadow.stdout)).toMatchObject({ mode: 'shadow', denyMode: 'shadow' });
    const before = (await untilEvery(workers, (s) => s.denyMode === 'shadow', 'switched the deny list to shadow')).map(
      (s) => s.denied.length,
    );
    expect(await statuses('scraper')).toEqual([200, 200]);
    const reported = await untilEvery(workers, () => true, 'answered');
    for (const [i, state] of reported.entries()) {
      expect(state.denied.slice(before[i])).toEqual([{ identity: 'user:scraper', shadow: true, reason: 'scraper' }]);
    }

    const off = await config('deny', 'mode', 'off');
    expect(off.code, off.stderr).toBe(0);
    await untilEvery(workers, (s) => s.denyMode === 'off', 'switched the deny list off');
    expect(await statuses('scraper')).toEqual([200, 200]);
    const after = await untilEvery(workers, () => true, 'answered');
    expect(after.map((s) => s.denied.length)).toEqual(reported.map((s) => s.denied.length));

    const bad = await config('deny', 'mode', 'on');
    expect(bad.code).toBe(2);
    expect(bad.stderr).toMatch(/<mode> must be 'enforce', 'shadow' or 'off', got "on"/);

    dashboard = await startDashboard(server.port);
    const refused = await dashboard.post({ action: 'denyMode', name: 'api', mode: 'strict' });
    expect(refused.status).toBe(400);
    expect(refused.body.error).toMatch(/mode must be 'enforce', 'shadow' or 'off'/);
    const set = await dashboard.post({ action: 'denyMode', name: 'api', mode: 'enforce' });
    expect(set.status, JSON.stringify(set.body)).toBe(200);
    expect(set.body.config).toMatchObject({ denyMode: 'enforce', mode: 'shadow' });
    await untilEvery(workers, (s) => s.denyMode === 'enforce', 'switched the deny list to enforce');
    expect(await statuses('scraper')).toEqual([403, 403]);
    expect(await statuses('alice')).toEqual([200, 200]);
    const state = await dashboard.state();
    expect(state.limiters).toMatchObject([{ name: 'api', config: { denyMode: 'enforce' } }]);
  });
});
