/**
 * The concurrency limiter on redisStore under a small fleet: 4 OS processes (more than the machine's cores) × 16
 * lanes, 3 tenants, limit 10 each, one redis-server of the test's own. Lanes acquire, hold a slot 2 ms, release.
 *
 * Exactness is judged by the callers' wall clocks, never by the store's answers: each holder records [Date.now()
 * after its acquire answered, Date.now() before its release was sent]. Date.now() counts whole ms, so the slot
 * was certainly held from 1 ms after the first to the second; a sweep over those certain intervals gives the most
 * holders a tenant surely had at once, which must never pass the limit (and, so that the check can fail, must
 * reach it). One process holds its slots 200 ms and is SIGKILLed mid-run: the slots it held must free by
 * themselves within the ttl plus a margin, and none before its lease expired. At the end nothing is leaked: the
 * tenants' lease keys are gone.
 */
import { fork, type ChildProcess } from 'node:child_process';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { Redis } from 'ioredis';
import { nextMessage, stopChildren } from '../harness/children.js';
import { startRedis, type RedisServer } from '../harness/redis.js';

const PROCESSES = 4;
const LOOPS = 16; // per process
const TENANTS = ['tenant-a', 'tenant-b', 'tenant-c'];
const LIMIT = 10;
const TTL_MS = 2000;
const HOLD_MS = 2;
const VICTIM_HOLD_MS = 200;
const RUN_MS = 4000;
const KILL_AT_MS = 1500;
/** How late past its ttl a dead holder's slot may free: scheduling on a loaded machine, not the store. */
const FREE_MARGIN_MS = 1000;

type Interval = [answeredAt: number, releaseSentAt: number];
interface Report {
  intervals: Interval[][];
  acquires: number;
  granted: number;
  degraded: number;
  releaseFailed: number;
}

/**
 * The most intervals certainly overlapping at one instant: each counts from 1 ms after its start (the answer came
 * at most 1 ms after the ms Date.now() gave) to its end; at one instant ends go first (touching is not overlapping).
 */
function mostCertainlyHeld(intervals: readonly Interval[]): number {
  const events: Array<[at: number, step: number]> = [];
  for (const [answeredAt, releaseSentAt] of intervals) {
    if (releaseSentAt > answeredAt + 1) events.push([answeredAt + 1, 1], [releaseSentAt, -1]);
  }
  events.sort((a, b) => a[0] - b[0] || a[1] - b[1]);
  let held = 0;
  let most = 0;
  for (const [, step] of events) {
    held += step;
    most = Math.max(most, held);
  }
  return most;
}

let server: RedisServer;
let admin: Redis;
const children: ChildProcess[] = [];

beforeAll(async () => {
  server = await startRedis();
  admin = new Redis({ host: server.host, port: server.port });
  for (let i = 0; i < PROCESSES; i++)
    children.push(fork(new URL('./concurrency-fleet-worker.mjs', import.meta.url), [String(server.port)], { stdio: 'inherit' }));
  await Promise.all(children.map((child) => nextMessage(child, 'ready')));
});

afterAll(async () => {
  await stopChildren(children);
  admin?.disconnect();
  await server?.stop();
});

describe('the wall-clock sweep', () => {
  test('counts intervals that certainly overlap, and neither touching ones nor ones within the 1 ms rounding', () => {
    const eleven: Interval[] = Array.from({ length: 11 }, (_, i) => [100 + i, 200]);
    expect(mostCertainlyHeld(eleven)).toBe(11);
    expect(
      mostCertainlyHeld([
        [100, 150],
        [149, 200],
      ]),
    ).toBe(1); // the second may have started at 150
    expect(
      mostCertainlyHeld([
        [100, 150],
        [148, 200],
      ]),
    ).toBe(2);
    expect(
      mostCertainlyHeld([
        [100, 101],
        [100, 101],
      ]),
    ).toBe(0); // too short to be sure of
  });
});

describe(`${PROCESSES} processes × ${LOOPS} lanes, ${TENANTS.length} tenants, limit ${LIMIT}, one holder SIGKILLed mid-run`, () => {
  test("never more than the limit held per tenant by the callers' wall clocks; the killed holder's slots free within its ttl and not before; no key left", async () => {
    const name = 'fleet';
    const keys = TENANTS.map((tenant) => `sluice:${name}:{${tenant}}:lease`);
    const [victim, ...survivors] = children as [ChildProcess, ...ChildProcess[]];
    const startAt = Date.now();
    const endAt = startAt + RUN_MS;

    // The victim says which lease ids it holds, with the wall-clock time each was answered.
    const victimHeld = new Map<string, { tenant: number; answeredAt: number }>();
    const victimDone: Array<{ tenant: number; interval: Interval }> = [];
    victim.on('message', (m: { type: string; id: string; tenant: number; answeredAt: number; releaseSentAt: number }) => {
      if (m.type === 'held') victimHeld.set(m.id, { tenant: m.tenant, answeredAt: m.answeredAt });
      else if (m.type === 'freed') {
        const held = victimHeld.get(m.id);
        victimHeld.delete(m.id);
        if (held !== undefined) victimDone.push({ tenant: held.tenant, interval: [held.answeredAt, m.releaseSentAt] });
      }
    });
    const reports = survivors.map((child) => nextMessage<Report>(child, 'done'));
    const base = { type: 'run', name, tenants: TENANTS, limit: LIMIT, ttlMs: TTL_MS, loops: LOOPS, endAt };
    victim.send({ ...base, holdMs: VICTIM_HOLD_MS, announce: true });
    for (const child of survivors) child.send({ ...base, holdMs: HOLD_MS, announce: false });

    await new Promise((resolve) => setTimeout(resolve, startAt + KILL_AT_MS - Date.now()));
    const exited = new Promise((resolve) => victim.once('exit', resolve));
    const killedAt = Date.now();
    victim.kill('SIGKILL');
    await exited;
    const heldAtKill = new Map(victimHeld);
    // Each lease's expiry as stored (ms on Redis TIME, the machine's clock, as Date.now()).
    const expiry = new Map<string, number>();
    for (const key of keys) {
      const flat = await admin.zrange(key, 0, -1, 'WITHSCORES');
      for (let i = 0; i < flat.length; i += 2) expiry.set(flat[i]!, Number(flat[i + 1]));
    }
    // What the victim held when it died is still stored: those slots are taken until their leases expire.
    expect(heldAtKill.size, 'the killed process held slots').toBeGreaterThan(0);
    for (const id of heldAtKill.keys()) expect(expiry.has(id), `lease ${id} of the killed holder is stored`).toBe(true);
    // Poll until all are gone. A release the victim had sent may still land just after the kill; past 200 ms
    // nobody can free its slots but their expiry: one certainly gone before its lease expired is freed early.
    const remaining = new Set(heldAtKill.keys());
    const early: string[] = [];
    let freedAfterMs = -1;
    while (freedAfterMs < 0 && Date.now() - killedAt <= TTL_MS + FREE_MARGIN_MS) {
      const readFrom = Date.now();
      const members = new Set((await Promise.all(keys.map((key) => admin.zrange(key, 0, -1)))).flat());
      const readBy = Date.now();
      for (const id of remaining) {
        if (members.has(id)) continue;
        if (readFrom > killedAt + 200 && readBy < expiry.get(id)!) early.push(id);
        remaining.delete(id);
      }
      if (remaining.size === 0) freedAfterMs = readBy - killedAt;
      else await new Promise((resolve) => setTimeout(resolve, 10));
    }
    expect(early, 'slots of the killed holder freed before their leases expired').toEqual([]);
    expect(
      freedAfterMs,
      `the killed holder's ${heldAtKill.size} slots free within ttl ${TTL_MS} ms + ${FREE_MARGIN_MS} ms`,
    ).toBeGreaterThanOrEqual(0);

    const done = await Promise.all(reports);
    const totals = { acquires: 0, granted: 0, degraded: 0, releaseFailed: 0 };
    for (const r of done) for (const field of Object.keys(totals) as Array<keyof typeof totals>) totals[field] += r[field];
    expect(totals.degraded).toBe(0);
    expect(totals.releaseFailed).toBe(0);

    // The sweep, per tenant: the survivors' intervals, the victim's completed ones, and the victim's held at the
    // kill (certainly held until it died: the store holds them longer still).
    const most = TENANTS.map((_, t) =>
      mostCertainlyHeld([
        ...done.flatMap((r) => r.intervals[t]!),
        ...victimDone.filter((v) => v.tenant === t).map((v) => v.interval),
        ...[...heldAtKill.values()].filter((h) => h.tenant === t).map((h): Interval => [h.answeredAt, killedAt]),
      ]),
    );
    console.log(
      `[concurrency fleet] ${totals.acquires} acquires by the survivors, ${totals.granted} granted; most held at once by wall clock per tenant ${most.join(', ')} (limit ${LIMIT}); ` +
        `the killed holder's ${heldAtKill.size} slots free ${freedAfterMs} ms after the kill (ttl ${TTL_MS} ms)`,
    );
    for (const m of most) expect(m).toBeLessThanOrEqual(LIMIT);
    // The check can fail: the fleet does fill a tenant's slots.
    expect(Math.max(...most)).toBe(LIMIT);

    // Nothing leaked: once the killed holder's leases are past their ttl, no lease key is left.
    await new Promise((resolve) => setTimeout(resolve, Math.max(0, killedAt + TTL_MS + 100 - Date.now())));
    for (const key of keys) expect(await admin.exists(key), key).toBe(0);
    expect(await admin.dbsize()).toBe(0);
  }, 30_000);
});
