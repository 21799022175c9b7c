/**
 * An event-loop stall is not a store failure, for SQLite run off the main thread: the SQLite store on a worker
 * thread (stall-worker.mjs), asked through messages, as an application keeps SQLite's synchronous work off its
 * event loop. The worker answers while the caller's loop is stalled by a real synchronous busy loop; no decision
 * may be degraded, the limit must hold exactly, the breaker stay closed. And a worker that really is slow, on a
 * healthy loop, is answered by the failure policy at the deadline.
 */
import { Worker } from 'node:worker_threads';
import { createLimiter, tokenBucket, type Decision, type Store } from '@sluice/core';
import type { LimitRequest, LimitResult } from '@sluice/core/store';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { tempFolder } from './helpers.js';
import { degradedCodes, expectStoreAnswered, ioTurn, stallEventLoop, wallClock } from '../../../../test/harness/event-loop-stall.js';

const folder = tempFolder('stall');
let worker: Worker;
/** How late the worker answers each call, in ms (0: at once). */
let slowMs = 0;
/** Numbers calls across every store made here: all of them share the worker. */
let lastId = 0;

/** The SQLite store on the worker thread, as the limiter sees it: each call a message there and one back. */
function workerStore(): Store {
  const waiting = new Map<number, { resolve: (value: unknown) => void; reject: (error: Error) => void }>();
  worker.on('message', (message: { id: number; value?: unknown; error?: string }) => {
    const call = waiting.get(message.id);
    if (call === undefined) return;
    waiting.delete(message.id);
    if (message.error !== undefined) call.reject(new Error(message.error));
    else call.resolve(message.value);
  });
  const ask = (method: string, args: unknown[]) =>
    new Promise<unknown>((resolve, reject) => {
      const id = ++lastId;
      waiting.set(id, { resolve, reject });
      worker.postMessage({ id, method, args, slowMs });
    });
  return {
    capabilities: { synchronous: false, clock: 'client', operations: ['limit', 'reset'] },
    limit: (request: LimitRequest) => ask('limit', [request]) as Promise<LimitResult>,
    reset: (key, ids) => ask('reset', [key, ids]) as Promise<void>,
  };
}

beforeAll(async () => {
  worker = new Worker(new URL('./stall-worker.mjs', import.meta.url), { workerData: { file: folder.file('limits.db') } });
  await new Promise((resolve, reject) => {
    worker.once('online', resolve);
    worker.once('error', reject);
  });
});

afterAll(async () => {
  await worker?.terminate();
  folder.remove();
});

const RULES = tokenBucket({ capacity: 5, refillRate: 1, interval: '1h' });
const TIMEOUT = 250;

describe('a stalled event loop is not a failure of SQLite on a worker thread', () => {
  for (const policy of ['allow', 'deny'] as const) {
    test(`20 decisions in flight through a 400 ms stall (onStoreError '${policy}'): none degraded, 5 of 20 allowed, breaker closed`, async () => {
      slowMs = 0;
      const limiter = createLimiter({
        name: `stall-${policy}`,
        store: workerStore(),
        rules: RULES,
        onStoreError: policy,
        timeout: TIMEOUT,
      });
      await limiter.limit('warm-up'); // the thread has loaded the store and opened the file
      await ioTurn(); // decisions made by a request handler, as they are
      const pending = Array.from({ length: 20 }, () => limiter.limit('attacker'));
      stallEventLoop(400);
      const decisions: Decision[] = await Promise.all(pending);
      await expectStoreAnswered(limiter, decisions, 5, { identity: 'other', limit: 5 });
    });
  }
});

describe('SQLite on a worker that is slow, on a healthy event loop, still gets its deadline', () => {
  test(`the worker answers each call 400 ms late: each of 5 decisions is answered by the policy (STORE_TIMEOUT) within the ${TIMEOUT} ms deadline plus 100 ms by the caller's clock`, async () => {
    slowMs = 0;
    const limiter = createLimiter({ name: 'slow', store: workerStore(), rules: RULES, timeout: TIMEOUT, circuitBreaker: false });
    await limiter.limit('warm-up');
    slowMs = 400;
    const timed = await Promise.all(Array.from({ length: 5 }, () => wallClock(() => limiter.limit('u'))));
    expect(degradedCodes(timed.map((t) => t.value))).toEqual(Array(5).fill('STORE_TIMEOUT'));
    for (const { elapsedMs } of timed) {
      expect(elapsedMs).toBeGreaterThanOrEqual(TIMEOUT);
      expect(elapsedMs).toBeLessThanOrEqual(TIMEOUT + 100);
    }
  });
});
