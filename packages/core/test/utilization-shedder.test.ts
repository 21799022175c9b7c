/**
 * The worker-utilization shedder (from the article 'Scaling your API with rate limiters') with a fake clock and a
 * scripted utilization signal: deterministic ramp curves (nothing shed for `delay`, then the least important class
 * first, critical never), the dead zone, the slow way back, and the nasty clocks (backward steps, huge gaps). The
 * real event-loop signal is measured in utilization-shedder.node.test.ts.
 */
import { afterEach, describe, expect, test, vi } from 'vitest';
import { createUtilizationShedder, createEventLoopSignal, type UtilizationShedderOptions } from '../src/shedding/index.js';

const CLOCK_START = 1_700_000_000_000;

/** A shedder driven by a fake clock and a utilization the test sets; `random` is fixed so chances are thresholds. */
function scripted(options: Partial<UtilizationShedderOptions> = {}) {
  // Overloaded from the first sample on, unless a test says otherwise.
  const state = { now: CLOCK_START, utilization: 1, reads: 0 };
  const shedder = createUtilizationShedder({
    signal: () => {
      state.reads++;
      return state.utilization;
    },
    clock: () => state.now,
    random: () => 0.5,
    ...options,
  });
  /** Moves the clock second by second, checking once per second (one sample each). */
  const run = (seconds: number, utilization: number) => {
    state.utilization = utilization;
    for (let s = 0; s < seconds; s++) {
      state.now += 1000;
      shedder.check('critical');
    }
  };
  return { shedder, state, run };
}

/** Float sums of 1/120 steps: compared to 9 decimals. */
const round = (x: number): number => Math.round(x * 1e9) / 1e9 + 0;

afterEach(() => {
  vi.unstubAllGlobals();
});

describe("the ramp (the article's numbers, the defaults: delay 28 s, ramp-up 120 s, good below 0.7, bad from 0.8)", () => {
  test('full overload: nothing for 28 s, then test traffic, then reads, then writes; critical never', () => {
    const { shedder, run } = scripted();
    const chances = (): Record<string, number> => Object.fromEntries(shedder.classes.map((c) => [c, round(shedder.check(c).dropChance)]));
    shedder.check('critical'); // first sample: the derivative starts from here
    run(28, 1);
    expect(shedder.amount).toBeCloseTo(0, 10);
    expect(chances()).toEqual({ critical: 0, write: 0, read: 0, test: 0 });
    run(20, 1); // a = 20 / 120 = 1/6: test traffic half shed
    expect(chances().test).toBe(0.5);
    expect(chances().read).toBe(0);
    run(20, 1); // a = 1/3: test fully shed, reads about to start
    expect(chances()).toMatchObject({ test: 1, read: 0, write: 0, critical: 0 });
    run(40, 1); // a = 2/3: reads fully shed
    expect(chances()).toMatchObject({ test: 1, read: 1, write: 0, critical: 0 });
    run(40, 1); // a = 1: everything but critical
    expect(chances()).toEqual({ critical: 0, write: 1, read: 1, test: 1 });
    run(100, 1); // stays at 1
    expect(round(shedder.amount)).toBe(1);
    expect(shedder.check('critical')).toMatchObject({ allowed: true, reason: 'ok' });
    expect(shedder.check('write')).toMatchObject({ allowed: false, reason: 'shed', retryAfter: 1000 });
  });

  test('half overload (u = 0.9) ramps at half the speed', () => {
    const { shedder, run } = scripted();
    shedder.check('critical');
    run(56, 0.9); // 56 s at half pressure = 28 s at full: back to 0
    expect(shedder.amount).toBeCloseTo(0, 10);
    run(80, 0.9); // + 80 × 0.5 / 120 = 1/3
    expect(shedder.amount).toBeCloseTo(1 / 3, 10);
  });

  test('the dead zone holds the amount; recovery brings traffic back slowly, the idler the faster', () => {
    const { shedder, run } = scripted();
    shedder.check('critical');
    run(28 + 120, 1);
    expect(round(shedder.amount)).toBe(1);
    run(300, 0.75); // between 0.7 and 0.8: no change, no flapping
    expect(round(shedder.amount)).toBe(1);
    run(60, 0.35); // u / 0.7 − 1 = −0.5: falls at half speed, 60 s → −0.25
    expect(shedder.amount).toBeCloseTo(0.75, 10);
    expect(shedder.check('write').dropChance).toBeCloseTo(0.25, 10);
    run(1, 0); // idle: falls at full speed
    expect(shedder.amount).toBeCloseTo(0.75 - 1 / 120, 10);
    run(1000, 0); // rests at −delay / rampUp, so the next overload again waits 28 s
    expect(shedder.amount).toBeCloseTo(-28 / 120, 10);
  });

  test('the amount moves only when the signal is sampled, by the time since the last sample at the new derivative', () => {
    const { shedder, state } = scripted({ delay: 0, sampleEvery: '5s' });
    state.utilization = 1;
    shedder.check('test'); // sample at CLOCK_START: derivative +1/120 per s
    state.now += 4000;
    shedder.check('test'); // no new sample within 5 s
    expect(state.reads).toBe(1);
    expect(shedder.amount).toBe(0);
    state.now += 1000;
    shedder.check('test'); // sample: 5 s at this sample's derivative
    expect(state.reads).toBe(2);
    expect(shedder.amount).toBeCloseTo(5 / 120, 10);
    state.now += 5000;
    state.utilization = 0.75;
    shedder.check('test'); // the dead zone: 5 more seconds move nothing
    expect(shedder.amount).toBeCloseTo(5 / 120, 10);
  });
});

describe('clocks', () => {
  test('a clock that steps back moves nothing; a huge gap counts as at most `delay`', () => {
    const { shedder, state } = scripted({ delay: '10s' });
    // (sampleEvery 1 s < delay: at most 10 s counts for one update)
    state.utilization = 1;
    shedder.check('test');
    const rest = shedder.amount;
    state.now -= 3_600_000;
    shedder.check('test');
    expect(shedder.amount).toBe(rest);
    state.now += 10 * 3_600_000; // nine hours later, in one step
    shedder.check('test');
    expect(shedder.amount).toBeCloseTo(rest + 10 / 120, 10); // 10 s counted, not nine hours
  });
});

describe('modes, draws and errors', () => {
  test('shadow decides and reports but never sheds; off never reads the signal', () => {
    const { shedder, state, run } = scripted({ delay: 0 });
    shedder.check('critical');
    run(200, 1);
    shedder.configure({ mode: 'shadow' });
    expect(shedder.check('test')).toMatchObject({ allowed: true, reason: 'shadow', dropChance: 1 });
    shedder.configure({ mode: 'off' });
    const reads = state.reads;
    state.now += 60_000;
    expect(shedder.check('test')).toMatchObject({ allowed: true, reason: 'disabled' });
    expect(state.reads).toBe(reads);
    shedder.configure({ mode: 'enforce' });
    expect(shedder.check('test')).toMatchObject({ allowed: false, reason: 'shed' });
  });

  test('a partial chance is a draw: below it sheds, at or above it passes', () => {
    let draw = 0;
    const state = { now: CLOCK_START };
    const shedder = createUtilizationShedder({ signal: () => 1, clock: () => state.now, random: () => draw, delay: 0, rampUp: '120s' });
    shedder.check('critical');
    for (let s = 0; s < 20; s++) {
      state.now += 1000;
      shedder.check('critical');
    } // a = 1/6: test traffic at 0.5
    draw = 0.49;
    expect(shedder.check('test')).toMatchObject({ allowed: false });
    expect(round(shedder.check('test').dropChance)).toBe(0.5);
    draw = 0.5;
    expect(shedder.check('test')).toMatchObject({ allowed: true });
  });

  test('custom classes: the first is never shed, the last goes first', () => {
    const state = { now: CLOCK_START };
    const shedder = createUtilizationShedder({
      classes: ['payments', 'everything else'],
      signal: () => 1,
      clock: () => state.now,
      delay: 0,
      random: () => 0,
    });
    shedder.check('payments');
    for (let s = 0; s < 60; s++) {
      state.now += 1000;
      shedder.check('payments');
    } // a = 0.5 of one sheddable class
    expect(shedder.check('everything else').dropChance).toBeCloseTo(0.5, 10);
    expect(shedder.check('payments').dropChance).toBe(0);
  });

  test.each([
    [{ classes: [] }, /classes must be distinct non-empty strings/],
    [{ classes: ['a', 'a'] }, /classes must be distinct non-empty strings/],
    [{ goodBelow: 0.9, badAbove: 0.8 }, /need 0 < goodBelow <= badAbove < 1/],
    [{ badAbove: 1.5 }, /badAbove must be a number from 0 to 1/],
    [{ rampUp: 0 }, /rampUp/],
    [{ delay: 'soon' }, /delay/],
    [{ signal: 0.5 }, /signal must be a function/],
    [{ mode: 'loud' }, /mode must be 'enforce', 'shadow' or 'off'/],
    [{ threshold: 0.8 }, /unknown option "threshold"/],
  ])('%j is refused, naming the field', (options, message) => {
    expect(() => createUtilizationShedder({ signal: () => 0, ...options } as UtilizationShedderOptions)).toThrow(message);
  });

  test('an unknown class and a signal that is not a number are errors, never a silent pass', () => {
    const shedder = createUtilizationShedder({ signal: () => Number.NaN });
    expect(() => shedder.check('vip')).toThrow(/unknown priority class "vip"; the classes are "critical", "write", "read", "test"/);
    expect(() => shedder.check('read')).toThrow(/signal must return a number from 0 to 1, got NaN/);
  });

  test('without a signal, a runtime with no event-loop utilization is refused clearly (UNSUPPORTED_OPERATION)', () => {
    vi.stubGlobal('performance', { now: () => 0 });
    expect(() => createEventLoopSignal()).toThrow(
      expect.objectContaining({ code: 'UNSUPPORTED_OPERATION', message: expect.stringMatching(/pass createUtilizationShedder a signal/) }),
    );
    expect(() => createUtilizationShedder()).toThrow(expect.objectContaining({ code: 'UNSUPPORTED_OPERATION' }));
  });
});
