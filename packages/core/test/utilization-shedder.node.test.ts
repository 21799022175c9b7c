/**
 * The default signal measured for real (Node): a busy event loop reads as saturated, an idle one as idle, and a
 * shedder on that signal starts shedding the lowest class under a real overload. Timing margins are wide: the
 * point is the direction of the signal, not its exact value on a shared machine.
 */
import { describe, expect, test } from 'vitest';
import { createUtilizationShedder, createEventLoopSignal } from '../src/shedding/index.js';

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

function busy(ms: number): void {
  const end = Date.now() + ms;
  while (Date.now() < end) {
    // the event loop is blocked: utilization near 1, the probe timer fires late
  }
}

describe('createEventLoopSignal (Node)', () => {
  test('a blocked event loop reads as saturated; an idle one as idle', async () => {
    const signal = createEventLoopSignal({ maxDelay: '100ms' });
    try {
      await sleep(50);
      signal(); // reset the window
      busy(300);
      expect(signal()).toBeGreaterThanOrEqual(0.9);
      await sleep(300);
      // Idle: the loop ran almost nothing; a late probe on a busy machine is allowed up to 60 ms of the 100.
      expect(signal()).toBeLessThanOrEqual(0.6);
    } finally {
      signal.close();
    }
  });

  test('a shedder on the default signal sheds test traffic under a real overload, never critical', async () => {
    let now = Date.now();
    const shedder = createUtilizationShedder({ delay: 0, rampUp: '4s', sampleEvery: '100ms', clock: () => now, random: () => 0 });
    try {
      shedder.check('critical');
      // Five samples of a blocked loop, each counted as 1 s of fake time: a = 5 × 1/4 → everything but critical.
      for (let i = 0; i < 5; i++) {
        busy(150);
        now += 1000;
        shedder.check('critical');
      }
      expect(shedder.check('test')).toMatchObject({ allowed: false, reason: 'shed' });
      expect(shedder.check('critical')).toMatchObject({ allowed: true });
    } finally {
      shedder.close();
    }
  });
});
