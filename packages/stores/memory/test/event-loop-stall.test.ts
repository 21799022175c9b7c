/**
 * An event-loop stall is not a store failure, on the memory store behind an asynchronous boundary (as a store on
 * another thread or a socket answers: each reply is a message read by the event loop). The stall is a real
 * synchronous busy loop while decisions are in flight; no decision may be degraded, the limit must hold exactly and
 * the breaker stay closed. A store that is really slow on a healthy loop must still be answered by the policy at its
 * deadline.
 */
import { createLimiter, tokenBucket, type Decision, type Store } from '@sluice/core';
import type { LimitRequest, LimitResult } from '@sluice/core/store';
import { describe, expect, test } from 'vitest';
import { memoryStore } from '../src/index.js';
import {
  degradedCodes,
  expectStoreAnswered,
  ioTurn,
  later,
  messageChannel,
  sleep,
  stallEventLoop,
  stallInSlices,
  wallClock,
} from '../../../../test/harness/event-loop-stall.js';

const RULES = tokenBucket({ capacity: 5, refillRate: 1, interval: '1h' });
const TIMEOUT = 250;

/**
 * The memory store answering through a message channel: each answer is read by the event loop `reads` times (a
 * reply read in one piece, or headers then body), as a reply from a socket or a worker is.
 */
function messageStore(reads: number): Store & { close(): void } {
  const inner = memoryStore();
  const channel = messageChannel<number>();
  const waiting = new Map<number, { left: number; answer: () => void }>();
  let id = 0;
  channel.port2.onmessage = (event: { data: number }) => {
    const call = waiting.get(event.data)!;
    if (--call.left > 0) return channel.port1.postMessage(event.data);
    waiting.delete(event.data);
    call.answer();
  };
  return {
    capabilities: { synchronous: false, clock: 'client', operations: ['limit', 'reset'] },
    limit: (request: LimitRequest) =>
      new Promise<LimitResult>((resolve) => {
        const call = ++id;
        waiting.set(call, { left: reads, answer: () => resolve(inner.limit(request)) });
        channel.port1.postMessage(call);
      }),
    reset: (key, ids) => Promise.resolve(inner.reset(key, ids)),
    close: () => {
      channel.port1.close();
      channel.port2.close();
    },
  };
}

/**
 * The memory store behind a queue served one call per turn of the event loop (a single worker, a connection whose
 * replies are parsed one per read): the twentieth call in flight needs twenty turns.
 */
function oneAtATimeStore(): Store {
  const inner = memoryStore();
  const queue: Array<() => void> = [];
  const serve = (): void => {
    queue.shift()!();
    if (queue.length > 0) later(serve, 0);
  };
  return {
    capabilities: { synchronous: false, clock: 'client', operations: ['limit', 'reset'] },
    limit: (request: LimitRequest) =>
      new Promise<LimitResult>((resolve) => {
        if (queue.push(() => resolve(inner.limit(request))) === 1) later(serve, 0);
      }),
    reset: (key, ids) => Promise.resolve(inner.reset(key, ids)),
  };
}

/** The memory store answering `delayMs` after each call, on a loop that is free meanwhile: a store that is slow. */
function slowStore(delayMs: number): Store {
  const inner = memoryStore();
  return {
    capabilities: { synchronous: false, clock: 'client', operations: ['limit', 'reset'] },
    limit: (request: LimitRequest) => new Promise<LimitResult>((resolve) => later(() => resolve(inner.limit(request)), delayMs)),
    reset: (key, ids) => Promise.resolve(inner.reset(key, ids)),
  };
}

describe('a stalled event loop is not a failure of the memory store behind a message channel', () => {
  for (const reads of [1, 3]) {
    for (const policy of ['allow', 'deny'] as const) {
      test(`20 decisions in flight through a 400 ms stall, each reply read in ${reads} piece(s) (onStoreError '${policy}'): none degraded, 5 of 20 allowed, breaker closed`, async () => {
        const store = messageStore(reads);
        const limiter = createLimiter({ name: `stall-${reads}-${policy}`, store, rules: RULES, onStoreError: policy, timeout: TIMEOUT });
        try {
          await ioTurn(); // decisions made by a request handler, as they are
          const pending = Array.from({ length: 20 }, () => limiter.limit('attacker'));
          stallEventLoop(400);
          const decisions: Decision[] = await Promise.all(pending);
          await expectStoreAnswered(limiter, decisions, 5, { identity: 'other', limit: 5 });
        } finally {
          store.close();
        }
      });
    }
  }

  test('20 decisions in flight through 30 stalls of 15 ms in a row, on a store that answers one call per loop turn: none degraded, 5 of 20 allowed', async () => {
    const limiter = createLimiter({ name: 'slices', store: oneAtATimeStore(), rules: RULES, timeout: TIMEOUT });
    await ioTurn();
    const pending = Array.from({ length: 20 }, () => limiter.limit('attacker'));
    const slices = stallInSlices(30, 15);
    const { value: decisions, elapsedMs } = await wallClock(() => Promise.all(pending));
    await slices;
    // The answers came after the deadline by the wall clock: the test stalled the loop as meant, and the limiter
    // did not charge the stalls to the store.
    expect(elapsedMs).toBeGreaterThan(TIMEOUT);
    await expectStoreAnswered(limiter, decisions, 5, { identity: 'other', limit: 5 });
  });
});

describe('a store that is slow on a healthy event loop still gets its deadline', () => {
  test(`answers 1 s late: each of 5 decisions is answered by the policy (STORE_TIMEOUT) within the ${TIMEOUT} ms deadline plus 100 ms by the caller's clock`, async () => {
    const limiter = createLimiter({ name: 'slow', store: slowStore(1000), rules: RULES, timeout: TIMEOUT, circuitBreaker: false });
    const timed = await Promise.all(Array.from({ length: 5 }, () => wallClock(() => limiter.limit('u'))));
    expect(degradedCodes(timed.map((t) => t.value))).toEqual(Array(5).fill('STORE_TIMEOUT'));
    for (const { elapsedMs } of timed) {
      expect(elapsedMs).toBeGreaterThanOrEqual(TIMEOUT);
      expect(elapsedMs).toBeLessThanOrEqual(TIMEOUT + 100);
    }
    await sleep(1000); // the late answers arrive and are dropped
  });
});
