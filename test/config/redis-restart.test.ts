/**
 * A Redis restart must not un-deny everyone. Four worker processes (deny-worker.mjs) on one redis-server without
 * persistence, each serving HTTP through @sluice/http with watchConfig keeping its limiter on the stored
 * configuration, a `sluice dashboard` watching, and the built CLI as the operator:
 * - the redis-server is SIGKILLed and restarted empty: every process keeps refusing the denied clients with 403
 *   (and serving the others), each warns once (`document_lost`), and the dashboard shows the document as lost;
 * - a process started after the loss has only its code's configuration, until `sluice config import` of the export
 *   taken before writes it back at its revision: then it refuses them too, and the dashboard no longer shows a loss;
 * - a deliberate delete (`sluice config clear`, a tombstone) does clear the list in every process, without a
 *   warning; an import from standard input brings it back.
 */
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { startRedis, type RedisServer } from '../harness/redis.js';
import {
  sluice,
  startDashboard,
  startWorkers,
  stateOf,
  statusFor,
  stopWorkers,
  untilEvery,
  type DashboardProcess,
  type FleetWorker,
} from './deny-fleet.js';

const PROCESSES = 4;
/** The workers' ioredis reconnects within a second or two, and each watcher reads every second (refresh 1 s). */
const RECOVERY_MS = 15_000;

let server: RedisServer;
let redis: Redis;
let workers: FleetWorker[] = [];
let late: FleetWorker[] = [];
let dashboard: DashboardProcess | undefined;
let folder: string;
let backup: string;

const at = () => ['--redis', `redis://127.0.0.1:${server.port}`];
const config = (...args: string[]) => sluice(['config', ...args, '--name', 'api', ...at()]);

async function statuses(fleet: readonly FleetWorker[], user: string): Promise<number[]> {
  return Promise.all(fleet.map((worker) => statusFor(worker, user)));
}

/** The dashboard's view of 'api', once it satisfies `check` (the dashboard reconnects to Redis by itself). */
async function dashboardView(check: (view: Record<string, unknown> | undefined) => boolean): Promise<Record<string, unknown>> {
  const deadline = Date.now() + RECOVERY_MS;
  for (;;) {
    const state = await dashboard!.state().catch(() => undefined);
    const view = state?.limiters?.find((limiter) => limiter.name === 'api');
    if (state !== undefined && check(view)) return view!;
    if (Date.now() > deadline) throw new Error(`the dashboard never showed what was expected: ${JSON.stringify(state)}`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

beforeAll(async () => {
  server = await startRedis();
  redis = new Redis({ host: server.host, port: server.port, lazyConnect: true });
  redis.on('error', () => {});
  folder = mkdtempSync(join(tmpdir(), 'sluice-config-backup-'));
  backup = join(folder, 'backup.json');
  workers = await startWorkers(server.port, PROCESSES);
  dashboard = await startDashboard(server.port);
});

afterAll(async () => {
  await dashboard?.stop();
  await stopWorkers([...workers, ...late]);
  redis?.disconnect();
  await server?.stop();
  if (folder !== undefined) rmSync(folder, { recursive: true, force: true });
});

describe('the deny list across a Redis restart', () => {
  test('SIGKILLed and restarted empty: every process keeps refusing the denied clients; import restores the document', async () => {
    for (const match of ['user:scraper', 'user:bot']) {
      const added = await config('deny', 'add', match, '--reason', 'abuse');
      expect(added.code, added.stderr).toBe(0);
    }
    await untilEvery(workers, (s) => s.deny.length === 2, 'applied both deny entries');
    expect(await statuses(workers, 'scraper')).toEqual([403, 403, 403, 403]);
    // The first deny write made an empty document (revision 1); the entries are in the deny structure.
    await dashboardView((view) => (view?.config as { deny?: unknown[] } | null)?.deny?.length === 2);
    const exported = await sluice(['config', 'export', ...at()]);
    expect(exported.code, exported.stderr).toBe(0);
    expect(JSON.parse(exported.stdout)).toMatchObject({ sluice: 'config-export', version: 1, limiters: { api: { revision: 1 } } });
    writeFileSync(backup, exported.stdout);

    const restartedAt = Date.now();
    await server.kill(); // SIGKILL: no shutdown, and no persistence to come back from
    await server.restart();
    await redis.connect();
    expect(await redis.get('sluice:config:api')).toBeNull();
    const states = await untilEvery(
      workers,
      (s) => s.warnings.some((w) => w.code === 'document_lost' && w.at > restartedAt),
      'noticed the document was lost',
      RECOVERY_MS,
    );
    for (const state of states) {
      expect([state.deny, state.revision, state.denyMode]).toEqual([['user:scraper', 'user:bot'], 1, 'enforce']);
      expect(state.warnings.filter((w) => w.code === 'document_lost')).toHaveLength(1);
    }
    expect(await statuses(workers, 'scraper')).toEqual([403, 403, 403, 403]);
    expect(await statuses(workers, 'bot')).toEqual([403, 403, 403, 403]);
    expect(await statuses(workers, 'alice')).toEqual([200, 200, 200, 200]);
    const lost = await dashboardView((view) => view?.lost !== undefined);
    expect(lost).toMatchObject({ config: null, lost: { revision: 1, denyEntries: 2 } });

    // A process started now finds nothing stored: its code's configuration, no deny list.
    late = await startWorkers(server.port, 1);
    expect((await stateOf(late[0]!)).deny).toEqual([]);
    expect(await statuses(late, 'scraper')).toEqual([200]);

    const imported = await sluice(['config', 'import', backup, ...at()]);
    expect(imported.code, imported.stderr).toBe(0);
    expect(imported.stderr).toContain('restored "api" at revision 1, 2 deny entries');
    expect(JSON.parse((await redis.get('sluice:config:api'))!)).toMatchObject({ revision: 1 });
    await untilEvery(late, (s) => s.deny.length === 2, 'applied the imported document');
    expect(await statuses([...workers, ...late], 'scraper')).toEqual([403, 403, 403, 403, 403]);
    await dashboardView((view) => view !== undefined && view.lost === undefined && view.config !== null);
    for (const state of await untilEvery([...workers, ...late], () => true, 'answered')) {
      expect([state.errors, state.unhandled]).toEqual([[], 0]);
    }
  });

  test('a deliberate delete through the CLI clears the list in every process; an import from standard input restores it', async () => {
    const fleet = [...workers, ...late];
    const warned = (await untilEvery(fleet, () => true, 'answered')).map((s) => s.warnings.length);
    const cleared = await config('clear');
    expect(cleared.code, cleared.stderr).toBe(0);
    expect(JSON.parse((await redis.get('sluice:config:api'))!)).toMatchObject({ revision: 2, deleted: true });
    const states = await untilEvery(fleet, (s) => s.deny.length === 0 && s.revision === null, 'cleared the deny list');
    expect(states.map((s, i) => s.warnings.slice(warned[i]))).toEqual(fleet.map(() => []));
    expect(await statuses(fleet, 'scraper')).toEqual([200, 200, 200, 200, 200]);
    const view = await dashboardView((v) => (v?.config as { deleted?: boolean } | null)?.deleted === true);
    expect(view.lost).toBeUndefined();

    const imported = await sluice(['config', 'import', ...at()], readFileSync(backup, 'utf8'));
    expect(imported.code, imported.stderr).toBe(0);
    // Over the tombstone of revision 2, the next revision; the entries back in the deny structure.
    expect(JSON.parse((await redis.get('sluice:config:api'))!)).toMatchObject({ revision: 3 });
    expect(Object.keys(await redis.hgetall('sluice:deny:{api}')).sort()).toEqual(['user:bot', 'user:scraper']);
    await untilEvery(fleet, (s) => s.deny.length === 2, 'applied the imported document');
    expect(await statuses(fleet, 'scraper')).toEqual([403, 403, 403, 403, 403]);
  });
});
