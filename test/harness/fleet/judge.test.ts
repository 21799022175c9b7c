/**
 * The wall-clock judge of the fleet simulations (test/harness/fleet/judge.mjs): an admission counts in any fixed
 * window its [start, end] interval overlaps, and only what no assignment can fit is over the limit.
 */
import { describe, expect, test } from 'vitest';
import { judgeFixedWindow } from './judge.mjs';

function admissions(list: Array<[identity: number, start: number, end: number]>) {
  return { identity: list.map((a) => a[0]), start: list.map((a) => a[1]), end: list.map((a) => a[2]), length: list.length };
}

const rule = { limit: 2, windowMs: 1000 };

describe('judging admissions by the callers wall clock', () => {
  test('admissions inside one window each: over is what exceeds the limit there', () => {
    const verdict = judgeFixedWindow(
      admissions([
        [0, 100, 110],
        [0, 200, 210],
        [0, 300, 310],
        [1, 100, 110],
      ]),
      rule,
    );
    expect(verdict).toMatchObject({ admitted: 4, over: 1, worstWindow: 3, worstRatio: 1.5, overWindows: 1 });
    expect(verdict.worst).toEqual([{ identity: 0, window: 0, admitted: 3 }]);
  });

  test('a call that straddles a boundary may count in either window: the limiter latency never counts against it', () => {
    // Window 0 is full with two admissions; the third was asked at 900 and answered at 1100: it fits window 1.
    const verdict = judgeFixedWindow(
      admissions([
        [0, 100, 110],
        [0, 200, 210],
        [0, 900, 1100],
        [0, 1200, 1210],
      ]),
      rule,
    );
    expect(verdict).toMatchObject({ over: 0, worstWindow: 2 });
  });

  test('earliest deadline first: a call that can only go in window 0 gets it before one that can also go later', () => {
    // Two flexible calls (0..1) arrive first in window 0; then two that can only be in window 0; limit 2 each window.
    const verdict = judgeFixedWindow(
      admissions([
        [0, 10, 1500],
        [0, 20, 1500],
        [0, 30, 40],
        [0, 50, 60],
      ]),
      rule,
    );
    expect(verdict.over).toBe(0);
  });

  test('identities are judged apart; a window holding more than the limit in every assignment is reported', () => {
    const list: Array<[number, number, number]> = [];
    for (let i = 0; i < 5; i++) list.push([7, 1000 + i, 1000 + i]);
    for (let i = 0; i < 2; i++) list.push([8, 1000 + i, 1000 + i]);
    const verdict = judgeFixedWindow(admissions(list), rule);
    expect(verdict).toMatchObject({ over: 3, worstWindow: 5, overWindows: 1 });
    expect(verdict.worst[0]).toEqual({ identity: 7, window: 1, admitted: 5 });
  });

  test('an interval that ends before it starts is an error, naming the admission', () => {
    expect(() => judgeFixedWindow(admissions([[0, 10, 5]]), rule)).toThrow(/admission 0 ends/);
  });
});
