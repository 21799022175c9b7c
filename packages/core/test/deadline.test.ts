/**
 * The stall-aware deadline (shared/deadline.ts) under a fake clock. A stall is the wall clock moving while no timer runs
 * (vi.setSystemTime); the timer armed before it then fires late by the stall. What is checked: a stall is charged
 * to a call for at most SLICE_MS + STALL_TOLERANCE_MS (7 ms) of it, whenever in the call's life it happens, for the shared
 * deadline and for `withDeadline`; on a healthy loop a call is refused one turn after its deadline, right after a
 * stall only after 3 turns on time.
 */
import { afterEach, beforeEach, describe, expect, test, vi } from 'vitest';
import { Deadlines, SLICE_MS, withDeadline } from '../src/shared/deadline.js';

beforeEach(() => {
  vi.useFakeTimers();
});

afterEach(async () => {
  await vi.runAllTimersAsync();
  vi.useRealTimers();
});

/** Follows `pending` from now on, so that its rejection is handled whenever it comes. */
function observe(pending: Promise<unknown>): () => string | undefined {
  let outcome: string | undefined;
  pending.then(
    () => (outcome = 'answered'),
    (error: { code?: string }) => (outcome = error.code ?? 'other'),
  );
  return () => outcome;
}

/** When `pending` settles, in ms after `start` by Date.now, stepping the fake clock one ms at a time. */
async function settledAfter(
  pending: Promise<unknown> | (() => string | undefined),
  start: number,
): Promise<{ ms: number; outcome: string }> {
  const outcome = typeof pending === 'function' ? pending : observe(pending);
  for (let i = 0; outcome() === undefined; i++) {
    if (i > 10_000) throw new Error('never settled');
    await vi.advanceTimersByTimeAsync(1);
  }
  return { ms: Date.now() - start, outcome: outcome()! };
}

const hung = () => new Promise<never>(() => {});
const stall = (ms: number) => vi.setSystemTime(Date.now() + ms);
/** What the core README promises a stall costs a call at most (SLICE_MS + STALL_TOLERANCE_MS), in ms. */
const MOST_CHARGED = 7;
/** The loop turns on time the README promises a reply right after a stall. */
const TURNS_AFTER_STALL = 3;

describe('a stall is charged to a call for at most 7 ms', () => {
  for (const at of [0, 3, 60, 97]) {
    test(`a 1 s stall ${at} ms into a hung call's 100 ms: refused between 1 s + 100 ms − ${MOST_CHARGED} ms and 1 s + 100 ms + a turn`, async () => {
      const start = Date.now();
      const pending = new Deadlines(100).race(hung());
      await vi.advanceTimersByTimeAsync(at);
      stall(1000);
      const { ms, outcome } = await settledAfter(pending, start);
      expect(outcome).toBe('STORE_TIMEOUT');
      expect(ms).toBeGreaterThanOrEqual(1000 + 100 - MOST_CHARGED);
      expect(ms).toBeLessThanOrEqual(1000 + 100 + SLICE_MS + 1);
    });
  }

  test('withDeadline (reset, a fallback store) is measured the same way', async () => {
    const start = Date.now();
    const pending = withDeadline(hung(), 100);
    stall(1000);
    const { ms, outcome } = await settledAfter(pending, start);
    expect(outcome).toBe('STORE_TIMEOUT');
    expect(ms).toBeGreaterThanOrEqual(1000 + 100 - MOST_CHARGED);
    expect(vi.getTimerCount()).toBe(0);
  });

  test('on a healthy loop a hung call is refused one turn after its deadline, and withDeadline leaves no timer', async () => {
    const start = Date.now();
    expect(await settledAfter(new Deadlines(100).race(hung()), start)).toEqual({ ms: 101, outcome: 'STORE_TIMEOUT' });
    const again = Date.now();
    expect(await settledAfter(withDeadline(hung(), 100), again)).toEqual({ ms: 101, outcome: 'STORE_TIMEOUT' });
    expect(vi.getTimerCount()).toBe(0);
  });
});

describe('a call past its deadline waits for the loop to be on time again', () => {
  /** A call whose reply the test releases, and a stall across its deadline; the reply comes `turns` turns after it. */
  async function replyAfterDeadline(stalled: boolean, turns: number): Promise<string> {
    let release: () => void = () => {};
    const pending = observe(new Deadlines(100).race(new Promise<void>((resolve) => (release = resolve))));
    await vi.advanceTimersByTimeAsync(98);
    if (stalled) stall(400);
    await vi.advanceTimersByTimeAsync(2); // the timer fires: the deadline has passed (late by the stall, if any)
    for (let i = 1; i < turns; i++) await vi.advanceTimersByTimeAsync(1);
    release();
    return (await settledAfter(pending, Date.now())).outcome;
  }

  test(`right after a stall, a reply read ${TURNS_AFTER_STALL - 1} turns after the deadline is used`, async () => {
    expect(await replyAfterDeadline(true, TURNS_AFTER_STALL)).toBe('answered');
  });

  test('on a healthy loop, a reply that comes two turns after the deadline is too late', async () => {
    expect(await replyAfterDeadline(false, 2)).toBe('STORE_TIMEOUT');
  });
});
