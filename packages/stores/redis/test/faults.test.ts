/**
 * The failure policy with real faults: a redis-server this test starts is killed under load, restarted on the
 * same port, and paused with SIGSTOP (a hang: the TCP connection stays open, nothing answers). Three limiters
 * share one client with its library's default options: fail open, fail closed, and fall back to a memory store;
 * the faults are run on each client the store accepts (ioredis, node-redis 5 on RESP2 and RESP3, node-redis 4,
 * Valkey GLIDE), one after the other on the same server.
 * Every decision must come within the deadline plus a small margin, answered by its policy and marked degraded
 * with a reason; the store must recover without the app doing anything; nothing may reject unhandled.
 */
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { createLimiter, isSluiceError, tokenBucket, type Decision, type Limiter, type Store } from '@sluice/core';
import { memoryStore } from '@sluice/memory';
import { redisStore, type RedisClient } from '../src/index.js';
import { startRedis, type RedisServer } from '../../../../test/harness/redis.js';
import { CLIENTS, type OpenClient } from './clients.js';

const TIMEOUT_MS = 250; // the limiter's default, stated here so the bound below reads plainly
/** Event-loop and scheduling slack on a shared 2-core machine; the measured worst case is printed. */
const MARGIN_MS = 100;
const WORKERS_PER_LIMITER = 8;

interface Sample {
  at: number;
  latencyMs: number;
  policy: string;
  decision: Decision;
}

let server: RedisServer;
let client: RedisClient;
let storeCalls = 0;
const unhandled: unknown[] = [];
const onUnhandled = (reason: unknown) => unhandled.push(reason);

beforeAll(async () => {
  process.on('unhandledRejection', onUnhandled);
  server = await startRedis();
});

afterAll(async () => {
  await server?.stop();
  process.off('unhandledRejection', onUnhandled);
});

function limiters(name: string): Array<{ policy: string; limiter: Limiter }> {
  const store = redisStore(client);
  const counted: Store = {
    capabilities: store.capabilities,
    limit: (r) => (storeCalls++, store.limit(r)),
    reset: (k, ids) => store.reset(k, ids),
  };
  // A generous bucket: under load we measure the failure path, not rate limiting.
  const rules = tokenBucket({ capacity: 1_000_000, refillRate: 1_000_000 });
  return [
    { policy: 'allow', limiter: createLimiter({ store: counted, rules, name: `${name}-allow`, onStoreError: 'allow' }) },
    { policy: 'deny', limiter: createLimiter({ store: counted, rules, name: `${name}-deny`, onStoreError: 'deny' }) },
    { policy: 'memory', limiter: createLimiter({ store: counted, rules, name: `${name}-memory`, onStoreError: memoryStore() }) },
  ];
}

/** Keeps WORKERS_PER_LIMITER requests in flight per limiter until stopped; yields to timers between requests. */
function load(targets: Array<{ policy: string; limiter: Limiter }>) {
  const samples: Sample[] = [];
  let running = true;
  const workers = targets.flatMap(({ policy, limiter }) =>
    Array.from({ length: WORKERS_PER_LIMITER }, async (_, w) => {
      while (running) {
        const start = performance.now();
        const decision = await limiter.limit(`id-${w}`);
        samples.push({ at: start, latencyMs: performance.now() - start, policy, decision });
        await new Promise((r) => setImmediate(r));
      }
    }),
  );
  return {
    samples,
    async stop() {
      running = false;
      await Promise.all(workers);
    },
  };
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Every limiter has answered from the store again (each has its own circuit breaker) since `since`. */
function recovered(samples: Sample[], targets: Array<{ policy: string }>, since: number): boolean {
  return targets.every(({ policy }) => samples.some((s) => s.policy === policy && s.at > since && !s.decision.degraded));
}

async function until(condition: () => boolean, limitMs: number): Promise<number> {
  const start = performance.now();
  while (!condition()) {
    if (performance.now() - start > limitMs) throw new Error(`condition not met within ${limitMs} ms`);
    await sleep(5);
  }
  return performance.now() - start;
}

function percentile(values: number[], p: number): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] ?? 0;
}

function summarize(label: string, samples: Sample[]): Record<string, unknown> {
  const latencies = samples.map((s) => s.latencyMs);
  const codes: Record<string, number> = {};
  for (const s of samples) {
    const code = s.decision.degraded ? (isSluiceError(s.decision.error) ? s.decision.error.code : 'unknown') : 'ok';
    codes[code] = (codes[code] ?? 0) + 1;
  }
  const summary = {
    phase: label,
    decisions: samples.length,
    p50Ms: +percentile(latencies, 50).toFixed(2),
    p99Ms: +percentile(latencies, 99).toFixed(2),
    maxMs: +latencies.reduce((a, b) => Math.max(a, b), 0).toFixed(2),
    codes,
  };
  console.log(`[faults] ${JSON.stringify(summary)}`);
  return summary;
}

/** Every degraded decision says why, and the policy decided it. Returns the offending samples (none expected). */
function policyViolations(samples: Sample[]): Sample[] {
  const bad: Sample[] = [];
  for (const sample of samples) {
    const { policy, decision } = sample;
    if (!decision.degraded) {
      if (decision.reason !== 'ok') bad.push(sample);
      continue;
    }
    const code = isSluiceError(decision.error) ? decision.error.code : undefined;
    const explained = code === 'STORE_TIMEOUT' || code === 'STORE_ERROR' || code === 'CIRCUIT_OPEN';
    const decided =
      policy === 'allow'
        ? decision.allowed && decision.reason === 'store_unavailable'
        : policy === 'deny'
          ? !decision.allowed && decision.reason === 'store_unavailable'
          : decision.allowed && decision.reason === 'ok'; // the memory store decided
    if (!explained || !decided) bad.push(sample);
  }
  return bad;
}

/** Decisions slower than the deadline plus the margin (none expected). */
function late(samples: Sample[]): Array<{ policy: string; latencyMs: number }> {
  return samples.filter((s) => s.latencyMs > TIMEOUT_MS + MARGIN_MS).map((s) => ({ policy: s.policy, latencyMs: s.latencyMs }));
}

// Each test waits up to 10 s for recovery; GLIDE reconnects with a backoff of its own (about 2.7 s measured).
describe.each(CLIENTS)('faults against a real redis-server, on $name', { timeout: 20_000 }, (kind) => {
  let open: OpenClient | undefined;
  beforeAll(async () => {
    // Connection errors while the server is down are expected (each kind listens for them); the limiter reports them.
    open = await kind.open(server);
    client = open.client;
  });
  afterAll(() => open?.close());

  test('killed under load, then restarted on the same port: every decision within the deadline; recovery without app action', async () => {
    const targets = limiters('kill');
    const run = load(targets);
    await sleep(300);
    const killedAt = performance.now();
    const callsAtKill = storeCalls;
    await server.kill();
    const deadAt = performance.now(); // the process is gone: from here on no decision can come from Redis
    await sleep(1500);
    const callsWhileDead = storeCalls - callsAtKill;
    const restartedAt = performance.now();
    await server.restart(); // empty server: the script must be loaded again (NOSCRIPT path)
    const recoveryMs = await until(() => recovered(run.samples, targets, restartedAt), 10_000);
    await sleep(200);
    await run.stop();

    // Requests started just before the kill may still time out: "healthy" is what finished before it.
    const healthy = run.samples.filter((s) => s.at + s.latencyMs < killedAt);
    const dead = run.samples.filter((s) => s.at + s.latencyMs >= killedAt && s.at < restartedAt);
    const after = run.samples.filter((s) => s.at >= restartedAt);
    summarize('healthy', healthy);
    const deadSummary = summarize('killed', dead);
    summarize('restarted', after);
    console.log(
      `[faults] kill: store calls while dead ${callsWhileDead} of ${dead.length} decisions (circuit breaker), recovery ${recoveryMs.toFixed(0)} ms after restart`,
    );

    expect(healthy.length).toBeGreaterThan(50);
    expect(healthy.every((s) => !s.decision.degraded)).toBe(true);
    expect(dead.length).toBeGreaterThan(100);
    expect(dead.filter((s) => s.decision.degraded).length).toBeGreaterThan(0);
    expect(Object.keys(deadSummary.codes as object)).toContain('CIRCUIT_OPEN');
    expect(dead.filter((s) => s.at >= deadAt && !s.decision.degraded)).toEqual([]);
    expect(late(run.samples)).toEqual([]);
    expect(policyViolations(run.samples)).toEqual([]);
    expect(after.some((s) => !s.decision.degraded)).toBe(true);
    // The last decisions are all healthy again: every limiter recovered by itself.
    for (const { policy } of targets) {
      const last = run.samples.filter((s) => s.policy === policy).at(-1)!;
      expect(last.decision.degraded, `${policy} recovered`).toBe(false);
    }
    expect(unhandled).toEqual([]);
  });

  test('paused with SIGSTOP under load (a hang): the deadline holds; SIGCONT recovers', async () => {
    const targets = limiters('stop');
    const run = load(targets);
    await sleep(300);
    const pausedAt = performance.now();
    server.pause();
    await sleep(1500);
    const resumedAt = performance.now();
    server.resume();
    const recoveryMs = await until(() => recovered(run.samples, targets, resumedAt), 10_000);
    await sleep(200);
    await run.stop();

    const paused = run.samples.filter((s) => s.at + s.latencyMs >= pausedAt && s.at < resumedAt);
    summarize(
      'healthy',
      run.samples.filter((s) => s.at + s.latencyMs < pausedAt),
    );
    const pausedSummary = summarize('paused', paused);
    summarize(
      'resumed',
      run.samples.filter((s) => s.at >= resumedAt),
    );
    console.log(`[faults] SIGSTOP: recovery ${recoveryMs.toFixed(0)} ms after SIGCONT`);

    // A hang is answered by a deadline: the limiter's (STORE_TIMEOUT), or on GLIDE its own requestTimeout, 250 ms
    // like the limiter's, whichever comes first (GLIDE's TimeoutError is a STORE_ERROR).
    const hangCodes = kind.library === 'valkey-glide' ? ['STORE_TIMEOUT', 'STORE_ERROR'] : ['STORE_TIMEOUT'];
    expect(Object.keys(pausedSummary.codes as object).filter((code) => hangCodes.includes(code))).not.toEqual([]);
    expect(Object.keys(pausedSummary.codes as object)).toContain('CIRCUIT_OPEN');
    expect(late(run.samples)).toEqual([]);
    expect(policyViolations(run.samples)).toEqual([]);
    for (const { policy } of targets) {
      const last = run.samples.filter((s) => s.policy === policy).at(-1)!;
      expect(last.decision.degraded, `${policy} recovered`).toBe(false);
    }
    expect(unhandled).toEqual([]);
  });
});
