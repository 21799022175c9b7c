/**
 * Concurrency leases under real concurrency: several OS processes, each with many acquires in flight on its own
 * connection, on one identity on one redis-server (Redis TIME). The lease script is atomic, so at no moment may
 * more than `limit` leases be held, and under this load the limit must be reached.
 *
 * How "never more than N at once" is measured: MONITOR streams every command in the order the server executes it
 * (one thread: a script runs whole before the next command). Each worker reports which lease ids it was granted
 * and which of its releases freed one; replaying the stream, a granted id's acquire adds it to the held set and a
 * successful release removes it. The set's size after each command is then exactly the number of leases held at
 * that point of the server's own order (no lease can expire in a run: ttl 30 s), independent of the script's
 * count and of any clock: its maximum is the quantity bounded, compared with `limit`. Every acquire sent must
 * appear in the stream (none missed), and the decisions' own `held` must agree with the replay's maximum.
 *
 * A holder killed with SIGKILL never releases: its slots must free by themselves when its leases expire (ttl 1 s),
 * not before, and all of them.
 */
import { fork, type ChildProcess } from 'node:child_process';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { Redis } from 'ioredis';
import { createConcurrencyLimiter } from '@sluice/core/concurrency';
import { redisStore } from '../src/index.js';
import { LEASE_SCRIPT, LEASE_SCRIPT_SHA1 } from '@sluice/redis-script';
import { startRedis, type RedisServer } from '../../../../test/harness/redis.js';

const PROCESSES = 4;
const IN_FLIGHT = 64; // per process
const REQUESTS = 1000; // acquires per process and run
const LIMIT = 8;
const HOLD_MS = 3; // a granted lease is held 0 to HOLD_MS ms, then released
const CRASH_TTL_MS = 1000;

let server: RedisServer;
let client: Redis;
let monitorClient: Redis | undefined;
const children: ChildProcess[] = [];
/** Every operation of every EVALSHA of the lease script the server ran, in its order: [key, op, id]. And ECHO markers. */
const stream: Array<[key: string, op: string, id: string]> = [];
const markers: string[] = [];

interface Reply {
  granted: string[];
  released: string[];
  refused: number;
  degraded: number;
  maxHeld: number;
  releaseFailed: number;
  held: Array<{ id: string; expiresAt: number; now: number }>;
}

function message(child: ChildProcess, type: string): Promise<Reply> {
  return new Promise((resolve, reject) => {
    const onMessage = (m: { type: string } & Reply) => {
      if (m.type === type) {
        child.off('message', onMessage);
        child.off('exit', onExit);
        resolve(m);
      }
    };
    const onExit = (code: number | null) => reject(new Error(`worker ${child.pid} exited (${code}) before '${type}'`));
    child.on('message', onMessage);
    child.once('exit', onExit);
  });
}

/** Waits until MONITOR has delivered everything the server ran before this call. */
async function drainMonitor(): Promise<void> {
  const marker = `drain-${Date.now()}-${Math.random()}`;
  await client.echo(marker);
  const deadline = Date.now() + 10_000;
  while (!markers.includes(marker)) {
    if (Date.now() > deadline) throw new Error('MONITOR did not deliver the marker');
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

beforeAll(async () => {
  server = await startRedis();
  client = new Redis({ host: server.host, port: server.port });
  // Loaded up front: no NOSCRIPT, so every EVALSHA in the stream ran.
  expect(await client.script('LOAD', LEASE_SCRIPT)).toBe(LEASE_SCRIPT_SHA1);
  monitorClient = await new Redis({ host: server.host, port: server.port }).monitor();
  monitorClient.on('monitor', (_time: string, args: string[]) => {
    const name = args[0]?.toLowerCase();
    if (name === 'evalsha' && args[1] === LEASE_SCRIPT_SHA1) {
      // One call carries n operations (those a process issued in one turn of its event loop): n keys, then op, id, limit, ttl each.
      const n = Number(args[2]);
      for (let i = 0; i < n; i++) stream.push([args[3 + i]!, args[3 + n + 4 * i]!, args[4 + n + 4 * i]!]);
    } else if (name === 'echo') markers.push(args[1]!);
  });
  for (let i = 0; i < PROCESSES; i++)
    children.push(fork(new URL('./leases-worker.mjs', import.meta.url), [String(server.port)], { stdio: 'inherit' }));
  await Promise.all(children.map((child) => message(child, 'ready')));
});

afterAll(async () => {
  await Promise.all(
    children.map(async (child) => {
      if (child.exitCode !== null || child.signalCode !== null) return;
      const exited = new Promise((r) => child.once('exit', r));
      child.send({ type: 'stop' });
      const timer = setTimeout(() => child.kill('SIGKILL'), 5000);
      await exited;
      clearTimeout(timer);
    }),
  );
  monitorClient?.disconnect();
  client?.disconnect();
  await server?.stop();
});

describe(`${PROCESSES} processes × ${IN_FLIGHT} acquires in flight on one identity, limit ${LIMIT}`, () => {
  test('never more than the limit held at once in the server order, and the limit reached', async () => {
    const name = 'leases-hammer';
    const key = `sluice:${name}:{the-one}:lease`;
    const replies = children.map((child) => message(child, 'done'));
    for (const child of children) {
      child.send({
        type: 'run',
        name,
        identity: 'the-one',
        limit: LIMIT,
        ttl: 30_000,
        requests: REQUESTS,
        inFlight: IN_FLIGHT,
        holdMs: HOLD_MS,
      });
    }
    const reports = await Promise.all(replies);
    await drainMonitor();

    const granted = new Set(reports.flatMap((r) => r.granted));
    const released = new Set(reports.flatMap((r) => r.released));
    const totals = { granted: granted.size, refused: 0, degraded: 0, releaseFailed: 0, maxHeld: 0 };
    for (const r of reports) {
      totals.refused += r.refused;
      totals.degraded += r.degraded;
      totals.releaseFailed += r.releaseFailed;
      totals.maxHeld = Math.max(totals.maxHeld, r.maxHeld);
    }
    expect(totals.degraded).toBe(0);
    expect(totals.releaseFailed).toBe(0);
    expect(totals.granted + totals.refused).toBe(PROCESSES * REQUESTS);
    expect(released).toEqual(granted);

    // The replay, in the server's order.
    const mine = stream.filter(([k]) => k === key);
    expect(mine.filter(([, op]) => op === 'acquire')).toHaveLength(PROCESSES * REQUESTS);
    const held = new Set<string>();
    let most = 0;
    let atMost = 0; // commands after which the limit was held
    for (const [, op, id] of mine) {
      if (op === 'acquire' && granted.has(id)) held.add(id);
      else if (op === 'release' && released.has(id)) held.delete(id);
      if (held.size > most) most = held.size;
      if (held.size === LIMIT) atMost++;
    }
    expect(held.size).toBe(0);
    console.log(
      `[leases] ${PROCESSES}×${IN_FLIGHT} in flight, ${PROCESSES * REQUESTS} acquires: ${totals.granted} granted, ${totals.refused} refused; ` +
        `${mine.length} script calls replayed in server order: most held at once ${most} (limit ${LIMIT}), the limit held after ${atMost} of them; decisions reported held ≤ ${totals.maxHeld}`,
    );
    expect(most).toBe(LIMIT);
    expect(totals.maxHeld).toBe(LIMIT);
  });

  test(`a holder killed with SIGKILL: its ${LIMIT} slots stay taken until its leases expire (ttl ${CRASH_TTL_MS} ms), then all free`, async () => {
    const name = 'leases-crash';
    const victim = children[0]!;
    const holding = message(victim, 'holding');
    victim.send({ type: 'hold', name, identity: 'crashy', limit: LIMIT, ttl: CRASH_TTL_MS, count: LIMIT });
    const { held } = await holding;
    expect(held).toHaveLength(LIMIT);
    const exited = new Promise((resolve) => victim.once('exit', resolve));
    victim.kill('SIGKILL');
    await exited;
    const killedAt = Date.now();

    const inFlight = createConcurrencyLimiter({
      store: redisStore(client),
      limit: LIMIT,
      ttl: 60_000,
      name,
      circuitBreaker: false,
      onStoreError: 'deny',
      timeout: 5_000,
    });
    const firstExpiry = Math.min(...held.map((h) => h.expiresAt));
    const lastExpiry = Math.max(...held.map((h) => h.expiresAt));
    expect(lastExpiry - Math.min(...held.map((h) => h.now))).toBeLessThanOrEqual(CRASH_TTL_MS + 100);

    const refused = await inFlight.acquire('crashy');
    expect(refused).toMatchObject({ allowed: false, reason: 'concurrency_limited', held: LIMIT, degraded: false });
    // The refusal says when the oldest dead lease expires.
    expect(refused.retryAfter).toBe(firstExpiry - refused.now);
    expect(refused.retryAfter).toBeGreaterThan(0);
    expect(refused.retryAfter).toBeLessThanOrEqual(CRASH_TTL_MS);

    // Poll until every slot is ours; no slot may free before its dead lease's expiry.
    const grants: number[] = [];
    while (grants.length < LIMIT) {
      const decision = await inFlight.acquire('crashy');
      expect(decision.degraded).toBe(false);
      if (decision.allowed) {
        const freedByNow = held.filter((h) => h.expiresAt <= decision.now).length;
        // Each slot we gain must be one a dead lease left by expiring: never more grants than expired dead leases.
        expect(grants.length + 1, `granted at ${decision.now}: only ${freedByNow} dead leases had expired`).toBeLessThanOrEqual(freedByNow);
        grants.push(decision.now);
      } else {
        await new Promise((resolve) => setTimeout(resolve, 10));
      }
      expect(Date.now() - killedAt, 'every slot freed within the ttl').toBeLessThan(CRASH_TTL_MS + 1000);
    }
    expect((await inFlight.acquire('crashy')).allowed).toBe(false);
    console.log(
      `[leases] SIGKILLed holder of ${LIMIT}: its leases expired ${firstExpiry - held[0]!.now}..${lastExpiry - held[0]!.now} ms after the first was taken; ` +
        `slots regained ${grants[0]! - firstExpiry}..${grants.at(-1)! - lastExpiry} ms after the corresponding expiry, the last ${Date.now() - killedAt} ms after the kill`,
    );
    expect(grants[0]!).toBeGreaterThanOrEqual(firstExpiry);
    expect(grants.at(-1)!).toBeGreaterThanOrEqual(lastExpiry);
  });
});
