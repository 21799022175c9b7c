/**
 * The proof of runtime configuration: a fleet of worker processes on one redis-server (started here), each with its
 * own ioredis client, limiter (fixed window 20 per hour, id 'w') and watchConfig (refresh 1 s); three hear changes
 * by pub/sub, one by its periodic read only. Under steady load (about a decision per millisecond each), the real
 * CLI, spawned as a process, flips the kill switch:
 * - every pub/sub process switches within 1 s of the write (measured from the document's updatedAt, stamped by
 *   the CLI just before its SET, to the first decision made in mode off), and within 250 ms, which only the push
 *   can give; the periodic-read process within its refresh (1 s) plus one read and a margin for a loaded machine;
 * - no process makes a decision in the old mode after its first decision in the new one.
 * Then a quota for one identity ('acme', limit 1000) applies to it alone: every later decision for acme is made
 * under the quota's limit, every decision for the others under the limiter's 20. Then the redis-server is killed
 * (SIGKILL, by its pid): the processes go on deciding on the last configuration (mode, quota), without one error
 * or unhandled rejection; each watcher warns once that the store cannot be read.
 */
import { fork, spawn, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { startRedis, type RedisServer } from '../harness/redis.js';

const CLI = fileURLToPath(new URL('../../packages/cli/dist/cli.js', import.meta.url));
const PUBSUB_WORKERS = 3;
const PUBSUB_BOUND_MS = 1_000;
const REFRESH_MS = 1_000;
/** One read of a local Redis takes well under a millisecond; the rest is room for a loaded machine's timers. */
const REFRESH_BOUND_MS = REFRESH_MS + 300;
/**
 * The stated bound (1 s) holds by the refresh alone; this one shows the push brought the change: with pub/sub
 * broken, a switch lands anywhere in the refresh period and three processes all under it would be rare.
 */
const PUSH_MS = 250;

interface Worker {
  child: ChildProcess;
  pubsub: boolean;
  label: string;
}

interface Dump {
  identities: string[];
  at: number[];
  who: number[];
  reason: string[];
  limit: number[];
  degraded: boolean[];
  errors: string[];
  unhandled: number;
  warnings: Array<{ code: string; message: string; at: number }>;
  mode: string;
  quotas: string[];
}

interface Decision {
  at: number;
  identity: string;
  reason: string;
  limit: number;
  degraded: boolean;
}

let server: RedisServer;
let redis: Redis;
const workers: Worker[] = [];

function next<T>(child: ChildProcess, type: string): Promise<T> {
  return new Promise((resolve, reject) => {
    const onMessage = (message: { type: string }) => {
      if (message.type !== type) return;
      child.off('message', onMessage);
      child.off('exit', onExit);
      resolve(message as T);
    };
    const onExit = (code: number | null) => reject(new Error(`worker ${child.pid} exited (${code}) before '${type}'`));
    child.on('message', onMessage);
    child.once('exit', onExit);
  });
}

/** Each worker's decisions since the previous dump, plus its state now. */
async function dump(): Promise<Array<{ worker: Worker; state: Dump; decisions: Decision[] }>> {
  return Promise.all(
    workers.map(async (worker) => {
      const reply = next<Dump>(worker.child, 'dump');
      worker.child.send({ type: 'dump' });
      const state = await reply;
      const decisions = state.at.map((at, i) => ({
        at,
        identity: state.identities[state.who[i]!]!,
        reason: state.reason[i]!,
        limit: state.limit[i]!,
        degraded: state.degraded[i]!,
      }));
      return { worker, state, decisions };
    }),
  );
}

/** Runs the built CLI as an operator would, and returns when it has exited. */
function sluice(...args: string[]): Promise<{ code: number | null; stderr: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [CLI, 'config', ...args, '--name', 'api', '--redis', `redis://127.0.0.1:${server.port}`], {
      stdio: ['ignore', 'ignore', 'pipe'],
    });
    let stderr = '';
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    child.once('error', reject);
    child.once('close', (code) => resolve({ code, stderr }));
  });
}

async function updatedAt(): Promise<number> {
  return (JSON.parse((await redis.get('sluice:config:api'))!) as { updatedAt: number }).updatedAt;
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

beforeAll(async () => {
  server = await startRedis();
  redis = new Redis({ host: server.host, port: server.port });
  redis.on('error', () => {});
  for (let i = 0; i <= PUBSUB_WORKERS; i++) {
    const pubsub = i < PUBSUB_WORKERS;
    const child = fork(new URL('./kill-switch-worker.mjs', import.meta.url), [String(server.port), pubsub ? '1' : '0'], {
      stdio: 'inherit',
    });
    workers.push({ child, pubsub, label: pubsub ? `process ${i + 1} (pub/sub)` : `process ${i + 1} (refresh only)` });
  }
  await Promise.all(workers.map((w) => next(w.child, 'ready')));
  for (const w of workers) w.child.send({ type: 'start' });
});

afterAll(async () => {
  await Promise.all(
    workers.map(async ({ child }) => {
      if (child.exitCode !== null || !child.connected) return;
      const exited = new Promise((r) => child.once('exit', r));
      child.send({ type: 'stop' });
      const timer = setTimeout(() => child.kill('SIGKILL'), 5_000);
      await exited;
      clearTimeout(timer);
    }),
  );
  redis?.disconnect();
  await server?.stop();
});

describe('runtime configuration across processes on one redis-server', () => {
  test('the kill switch, flipped by the CLI mid-load, takes effect in every process within the stated time', async () => {
    await sleep(1_500); // steady load first
    await dump(); // forget the warm-up
    const off = await sluice('off');
    expect(off.code, off.stderr).toBe(0);
    const writtenAt = await updatedAt();
    await sleep(REFRESH_BOUND_MS + 700);
    const latencies: string[] = [];
    for (const { worker, state, decisions } of await dump()) {
      expect(state.mode).toBe('off');
      const first = decisions.findIndex((d) => d.reason === 'disabled');
      expect(first, `${worker.label} never decided in mode off`).toBeGreaterThan(0);
      // Decisions were made in the old mode right up to the switch: the load was steady across it.
      expect(decisions[first - 1]!.reason).not.toBe('disabled');
      const latency = decisions[first]!.at - writtenAt;
      latencies.push(`${worker.label}: ${latency} ms`);
      expect(latency, worker.label).toBeLessThanOrEqual(worker.pubsub ? PUBSUB_BOUND_MS : REFRESH_BOUND_MS);
      if (worker.pubsub) expect(latency, `${worker.label}: the push, not the refresh`).toBeLessThanOrEqual(PUSH_MS);
      const after = decisions.slice(first);
      expect(
        after.filter((d) => d.reason !== 'disabled'),
        `${worker.label} decided in the old mode after the switch`,
      ).toEqual([]);
      expect(after.length, `${worker.label} kept deciding`).toBeGreaterThan(500);
      expect([state.errors, state.unhandled]).toEqual([[], 0]);
    }
    console.log(
      `kill switch (sluice config off), from the write to each process's first decision in mode off:\n  ${latencies.join('\n  ')}`,
    );
  });

  test("a quota set by the CLI applies to its identity alone; the others keep the limiter's rules", async () => {
    expect((await sluice('on')).code).toBe(0);
    const quota = await sluice('quota', 'set', 'acme', '[{"algorithm":"fixed-window","id":"w","limit":1000,"window":"1h"}]');
    expect(quota.code, quota.stderr).toBe(0);
    const writtenAt = await updatedAt();
    await sleep(REFRESH_BOUND_MS + 700);
    const latencies: string[] = [];
    for (const { worker, state, decisions } of await dump()) {
      expect([state.mode, state.quotas]).toEqual(['enforce', ['acme']]);
      const first = decisions.findIndex((d) => d.identity === 'acme' && d.limit === 1_000);
      expect(first, `${worker.label} never applied the quota`).toBeGreaterThanOrEqual(0);
      latencies.push(`${worker.label}: ${decisions[first]!.at - writtenAt} ms`);
      expect(decisions[first]!.at - writtenAt, worker.label).toBeLessThanOrEqual(worker.pubsub ? PUBSUB_BOUND_MS : REFRESH_BOUND_MS);
      const after = decisions.slice(first);
      const acme = after.filter((d) => d.identity === 'acme');
      const others = after.filter((d) => d.identity !== 'acme');
      expect(new Set(acme.map((d) => d.limit))).toEqual(new Set([1_000]));
      expect(new Set(others.map((d) => d.limit))).toEqual(new Set([20]));
      // The others are far past 20 in this hour; acme, under 1000 shared by the fleet, is allowed until it spends it.
      expect(others.filter((d) => d.reason === 'ok' && !d.degraded)).toEqual([]);
      expect(acme.some((d) => d.reason === 'ok')).toBe(true);
      expect([state.errors, state.unhandled]).toEqual([[], 0]);
    }
    console.log(
      `quota for "acme" (sluice config quota set), from the write to each process's first decision under it:\n  ${latencies.join('\n  ')}`,
    );
  });

  test('the redis-server killed: every process goes on deciding on the last configuration, without an error', async () => {
    await dump();
    const killedAt = Date.now();
    await server.kill();
    await sleep(3_000);
    for (const { worker, state, decisions } of await dump()) {
      const afterKill = decisions.filter((d) => d.at > killedAt + 500); // past the store's deadline: the fallback answers
      expect(afterKill.length, `${worker.label} kept deciding`).toBeGreaterThan(500);
      expect(afterKill.every((d) => d.degraded)).toBe(true);
      expect([state.mode, state.quotas]).toEqual(['enforce', ['acme']]);
      expect(new Set(afterKill.filter((d) => d.identity === 'acme').map((d) => d.limit))).toEqual(new Set([1_000]));
      expect(new Set(afterKill.filter((d) => d.identity !== 'acme').map((d) => d.limit))).toEqual(new Set([20]));
      expect(
        afterKill.some((d) => d.identity !== 'acme' && d.reason === 'rate_limited'),
        'the local fallback limits under the last rules',
      ).toBe(true);
      expect([state.errors, state.unhandled]).toEqual([[], 0]);
      const outage = state.warnings.filter((w) => w.at > killedAt);
      expect(outage.map((w) => w.code)).toEqual(['read_failed']);
      expect(outage[0]!.message).toMatch(/watchConfig\("api"\): the store could not be read .*keeping the last known configuration/);
    }
  });
});
