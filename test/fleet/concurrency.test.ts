/**
 * Exactness under concurrency: several OS processes, each with many requests in flight on its own connection,
 * hit one identity on one redis-server. The script is atomic, so for the exact algorithms the number allowed
 * must equal the limit exactly, in every run. Refill is set so slow (1 per day, or per 3650 days where refill
 * comes at epoch-aligned instants) that none happens during a run, and the fixed window is placed so that no
 * boundary falls inside it. The same holds for take (the units granted add up to the capacity exactly) and reserve
 * (every booking starts at least the bucket's interval after the one before it).
 */
import { fork, type ChildProcess } from 'node:child_process';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { fixedWindow, gcra, leakyBucket, slidingWindowCounter, slidingWindowLog, tokenBucket, type Rule } from '@sluice/core';
import { rawCommand, startRedis, type RedisServer } from '../harness/redis.js';

const PROCESSES = 4;
const IN_FLIGHT = 64; // per process
const REQUESTS = 400; // per process and run: 1,600 requests against a limit of 500
const LIMIT = 500;
const RUNS = 3;

let server: RedisServer;
const children: ChildProcess[] = [];
let run = 0;

/** What a worker reports: counts, and with reserve the starts it booked. */
type Reply = Record<string, number> & { starts?: number[] };

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

beforeAll(async () => {
  server = await startRedis();
  for (let i = 0; i < PROCESSES; i++) {
    // Half the processes pipeline automatically, half do not; half batch the decisions they issue together into
    // shared script calls (the default), half send one call per decision: the store must be exact every way.
    const child = fork(new URL('./concurrency-worker.mjs', import.meta.url), [String(server.port), String(i % 2), String(i < 2 ? 1 : 0)], {
      stdio: 'inherit',
    });
    children.push(child);
  }
  await Promise.all(children.map((child) => message(child, 'ready')));
});

afterAll(async () => {
  await Promise.all(
    children.map(async (child) => {
      if (child.exitCode !== null) return;
      const exited = new Promise((r) => child.once('exit', r));
      child.send({ type: 'stop' });
      const timer = setTimeout(() => child.kill('SIGKILL'), 5000);
      await exited;
      clearTimeout(timer);
    }),
  );
  await server?.stop();
});

/** How every request of a run decides: limit, take of `cost`, or reserve within `maxWait`. */
type RunOperation = { operation: 'limit' } | { operation: 'take'; cost: number } | { operation: 'reserve'; maxWait: number };

/** Sends one run to every process at once and adds up what they were allowed (granted, and the starts booked). */
async function hammer(
  rules: readonly Rule[],
  how: RunOperation = { operation: 'limit' },
): Promise<{ allowed: number; denied: number; degraded: number; granted: number; starts: number[] }> {
  const id = ++run;
  const replies = children.map((child) => message(child, 'done'));
  for (const child of children) {
    child.send({ type: 'run', run: id, rules, name: `conc${id}`, identity: 'the-one', requests: REQUESTS, inFlight: IN_FLIGHT, ...how });
  }
  const totals = { allowed: 0, denied: 0, degraded: 0, granted: 0, starts: [] as number[] };
  for (const reply of await Promise.all(replies)) {
    totals.allowed += reply.allowed!;
    totals.denied += reply.denied!;
    totals.degraded += reply.degraded!;
    totals.granted += reply.granted!;
    totals.starts.push(...(reply.starts ?? []));
  }
  return totals;
}

/** A fixed window that opened a second ago and closes in an hour: no boundary inside the run. */
function currentFixedWindow(): Rule {
  const rule = fixedWindow({ limit: LIMIT, window: '1h' });
  return { ...rule, params: { ...rule.params, offsetMs: (Date.now() - 1000) % 3_600_000 } } as Rule;
}

const CASES: Array<[string, () => Rule[], number]> = [
  ['fixed window', () => [currentFixedWindow()], LIMIT],
  ['sliding window log', () => [slidingWindowLog({ limit: LIMIT, window: '1h' })], LIMIT],
  // Exact while the run stays inside one window (3650 days long, the current one opened in Dec 2019, the previous is empty).
  ['sliding window counter', () => [slidingWindowCounter({ limit: LIMIT, window: '3650d' })], LIMIT],
  ['token bucket (smooth)', () => [tokenBucket({ capacity: LIMIT, refillRate: 1, interval: '1d' })], LIMIT],
  ['token bucket (interval)', () => [tokenBucket({ capacity: LIMIT, refillRate: 1, interval: '3650d', refill: 'interval' })], LIMIT],
  ['leaky bucket', () => [leakyBucket({ capacity: LIMIT, leakRate: 1, interval: '1d' })], LIMIT],
  ['gcra', () => [gcra({ limit: LIMIT, period: '1d' })], LIMIT],
  // Compound: the tighter rule binds and, all-or-nothing, the looser one is charged only for what passed.
  [
    'compound token bucket 300 + fixed window 500',
    () => [tokenBucket({ capacity: 300, refillRate: 1, interval: '1d' }), currentFixedWindow()],
    300,
  ],
];

describe(`${PROCESSES} processes × ${IN_FLIGHT} in flight on one identity`, () => {
  for (const [name, rules, expected] of CASES) {
    test(`${name}: allowed === ${expected} in each of ${RUNS} runs`, async () => {
      const counts: number[] = [];
      for (let i = 0; i < RUNS; i++) {
        const totals = await hammer(rules());
        counts.push(totals.allowed);
        expect(totals.degraded).toBe(0);
        expect(totals.allowed + totals.denied).toBe(PROCESSES * REQUESTS);
      }
      console.log(`[concurrency] ${name}: allowed per run ${counts.join(', ')} of ${PROCESSES * REQUESTS} requests (limit ${expected})`);
      expect(counts).toEqual(Array.from({ length: RUNS }, () => expected));
      if (rules().length > 1) {
        // All-or-nothing: the fixed window was charged for the 300 that passed, not for what the bucket refused.
        const stored = await rawCommand(server.port, `GET sluice:conc${run}:{the-one}:fw:3600000`);
        expect(stored.split('\r\n')[1]!.split(',')[1]).toBe('300');
      }
    });
  }
});

describe(`take and reserve: ${PROCESSES} processes × ${IN_FLIGHT} in flight on one identity`, () => {
  test(`take: the units granted add up to the capacity exactly (token bucket ${LIMIT}, takes of 3), in each of ${RUNS} runs`, async () => {
    const granted: number[] = [];
    for (let i = 0; i < RUNS; i++) {
      const totals = await hammer([tokenBucket({ capacity: LIMIT, refillRate: 1, interval: '1d' })], { operation: 'take', cost: 3 });
      expect(totals.degraded).toBe(0);
      granted.push(totals.granted);
    }
    console.log(`[concurrency] take: units granted per run ${granted.join(', ')} of ${PROCESSES * REQUESTS * 3} asked (capacity ${LIMIT})`);
    expect(granted).toEqual(Array.from({ length: RUNS }, () => LIMIT));
  });

  test('reserve: every request is booked, and no two bookings are closer than the bucket allows (1 per 10 ms, capacity 1)', async () => {
    const totals = await hammer([tokenBucket({ capacity: 1, refillRate: 1, interval: 10 })], { operation: 'reserve', maxWait: 600_000 });
    expect(totals.degraded).toBe(0);
    expect(totals.allowed).toBe(PROCESSES * REQUESTS);
    const starts = totals.starts.sort((a, b) => a - b);
    let closest = Infinity;
    for (let i = 1; i < starts.length; i++) closest = Math.min(closest, starts[i]! - starts[i - 1]!);
    console.log(`[concurrency] reserve: ${starts.length} bookings from ${starts[0]} to ${starts.at(-1)}, closest two ${closest} ms apart`);
    expect(closest).toBeGreaterThanOrEqual(10);
  });
});
