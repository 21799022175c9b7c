/**
 * One duration convention: every duration option of core (createLimiter's `timeout`, the circuit
 * breaker's `cooldown`, reserve's `maxWait`, createFailurePolicy's `timeout`) takes milliseconds or a string such
 * as '1s', the two alike; a bad value is refused naming the field and what it accepts; the former `...Ms` name
 * is refused with the current one.
 */
import { afterEach, beforeEach, describe, expect, test, vi } from 'vitest';
import { createLimiter, tokenBucket, type Duration, type Store } from '../src/index.js';
import { durationOption } from '../src/shared/duration.js';
import { createFailurePolicy, type LimitRequest, type LimitResult } from '../src/store/index.js';
import { MapStore } from './support/map-store.js';
import { CLOCK_START } from './support/scenario.js';

const rules = tokenBucket({ capacity: 1, refillRate: 1, interval: '1s' });
const ACCEPTS = /\(a whole number of ms or a string like '250ms', '1s', '5m', '1h', '1d'\), got "soon"$/;

/** A remote store that never answers, or always fails: what a deadline and a breaker are for. */
class BrokenStore implements Store {
  readonly capabilities = { synchronous: false, clock: 'client', operations: ['limit', 'reset'] } as const;
  calls = 0;
  constructor(private readonly behaviour: 'hang' | 'reject') {}

  limit(_request: LimitRequest): Promise<LimitResult> {
    this.calls++;
    return this.behaviour === 'hang' ? new Promise(() => {}) : Promise.reject(new Error('ECONNREFUSED'));
  }

  reset(): Promise<void> {
    return Promise.resolve();
  }
}

/** A map store announcing reserve. */
class ReserveStore extends MapStore {
  override readonly capabilities = { synchronous: true, clock: 'client', operations: ['limit', 'reset', 'reserve'] } as const;
}

function thrown(work: () => unknown): Error & { code?: string } {
  try {
    work();
  } catch (error) {
    return error as Error & { code?: string };
  }
  throw new Error('expected a throw');
}

describe('createLimiter timeout', () => {
  beforeEach(() => vi.useFakeTimers());
  afterEach(async () => {
    await vi.runAllTimersAsync();
    vi.useRealTimers();
  });

  /** When a call to a hung store is answered, in (fake) ms after it was made. */
  async function answeredAfter(timeout: Duration): Promise<number> {
    const limiter = createLimiter({ store: new BrokenStore('hang'), rules, timeout, circuitBreaker: false });
    const start = Date.now();
    let answeredAt: number | undefined;
    void limiter.limit('a').then((decision) => {
      expect(decision.error).toMatchObject({ code: 'STORE_TIMEOUT' });
      answeredAt = Date.now();
    });
    while (answeredAt === undefined) await vi.advanceTimersByTimeAsync(1);
    return answeredAt - start;
  }

  test.each<[Duration, Duration]>([
    ['1s', 1000],
    ['250ms', 250],
  ])('%j and %j are the same deadline', async (text, ms) => {
    const expected = await answeredAfter(ms);
    expect(expected).toBeGreaterThanOrEqual(Number(ms));
    expect(expected).toBeLessThanOrEqual(Number(ms) + 2); // one loop turn of grace (shared/deadline.ts)
    expect(await answeredAfter(text)).toBe(expected);
  });

  test('a bad value is refused naming the field and what it accepts', () => {
    const error = thrown(() => createLimiter({ store: new MapStore(), rules, timeout: 'soon' as Duration }));
    expect(error.code).toBe('INVALID_OPTION');
    expect(error.message).toMatch(/^\[sluice\] createLimiter: timeout must be a duration from 1 to 2147483647 ms /);
    expect(error.message).toMatch(ACCEPTS);
  });

  test('the former name timeoutMs is refused with the current one', () => {
    const error = thrown(() => createLimiter({ store: new MapStore(), rules, timeoutMs: 1000 } as never));
    expect(error.code).toBe('UNKNOWN_OPTION');
    expect(error.message).toMatch(/^\[sluice\] createLimiter: unknown option "timeoutMs"; accepted options are store, rules, .*timeout/);
  });
});

describe('circuitBreaker cooldown', () => {
  /** How long after opening the breaker lets a probe reach the store. */
  async function probesAfter(cooldown: Duration): Promise<number> {
    const store = new BrokenStore('reject');
    let now = CLOCK_START;
    const limiter = createLimiter({ store, rules, clock: () => now, circuitBreaker: { failureThreshold: 1, cooldown } });
    await limiter.limit('a'); // fails: the circuit opens at CLOCK_START
    while (store.calls === 1) {
      now += 1;
      await limiter.limit('a');
    }
    return now - CLOCK_START;
  }

  test("'1s' and 1000 are the same cooldown", async () => {
    expect(await probesAfter(1000)).toBe(1000);
    expect(await probesAfter('1s')).toBe(1000);
  });

  test('a bad value is refused naming the field', () => {
    const error = thrown(() => createLimiter({ store: new MapStore(), rules, circuitBreaker: { cooldown: 'soon' as Duration } }));
    expect(error.message).toMatch(/^\[sluice\] createLimiter: circuitBreaker\.cooldown must be a duration of at least 1 ms /);
    expect(error.message).toMatch(ACCEPTS);
  });

  test('the former name cooldownMs is refused with the current one', () => {
    const error = thrown(() => createLimiter({ store: new MapStore(), rules, circuitBreaker: { cooldownMs: 1000 } as never }));
    expect(error.code).toBe('UNKNOWN_OPTION');
    expect(error.message).toBe(
      '[sluice] createLimiter: circuitBreaker: unknown option "cooldownMs"; accepted options are failureThreshold, cooldown',
    );
  });
});

describe('reserve maxWait', () => {
  /** Two reservations on a 1-per-second bucket: the second starts 1 s later, if maxWait allows it. */
  function secondBooked(maxWait: Duration): boolean {
    const limiter = createLimiter({ store: new ReserveStore(), rules, clock: () => CLOCK_START });
    expect(limiter.reserveSync('a', { maxWait })).toMatchObject({ allowed: true, startAt: CLOCK_START });
    return limiter.reserveSync('a', { maxWait }).allowed;
  }

  test("'1s' and 1000 are the same wait, and so are '999ms' and 999; '0ms' and 0 are accepted", () => {
    expect([secondBooked(1000), secondBooked('1s')]).toEqual([true, true]);
    expect([secondBooked(999), secondBooked('999ms')]).toEqual([false, false]);
    expect([secondBooked(0), secondBooked('0ms')]).toEqual([false, false]);
  });

  test('a bad value is refused naming the field', () => {
    const limiter = createLimiter({ store: new ReserveStore(), rules, clock: () => CLOCK_START });
    const error = thrown(() => limiter.reserveSync('a', { maxWait: 'soon' as Duration }));
    expect(error.code).toBe('INVALID_OPTION');
    expect(error.message).toMatch(/^\[sluice\] reserve options: maxWait must be a duration from 0 to 140737488355328 ms /);
    expect(error.message).toMatch(ACCEPTS);
  });

  test('the former name maxWaitMs is refused with the current one, before anything is booked', () => {
    const store = new ReserveStore();
    const limiter = createLimiter({ store, rules, clock: () => CLOCK_START });
    const error = thrown(() => limiter.reserveSync('a', { maxWaitMs: 1000 } as never));
    expect(error.code).toBe('UNKNOWN_OPTION');
    expect(error.message).toBe('[sluice] reserve options: unknown option "maxWaitMs"; accepted options are cost, maxWait');
    expect(store.calls).toBe(0);
  });
});

describe('createFailurePolicy timeout', () => {
  test("'1s' and 1000 are the same deadline", () => {
    expect(createFailurePolicy({ timeout: '1s' }).timeoutMs).toBe(1000);
    expect(createFailurePolicy({ timeout: 1000 }).timeoutMs).toBe(1000);
  });

  test('a bad value is refused naming the field; the former name with the current one', () => {
    expect(thrown(() => createFailurePolicy({ timeout: 'soon' as Duration, caller: 'tier' })).message).toMatch(
      /^\[sluice\] tier: timeout must be a duration/,
    );
    expect(thrown(() => createFailurePolicy({ timeoutMs: 100 } as never)).message).toMatch(
      /unknown option "timeoutMs"; accepted options are/,
    );
  });
});

describe('durationOption', () => {
  test.each<[unknown, number]>([
    [0, 0],
    ['0ms', 0],
    [1000, 1000],
    ['1s', 1000],
    ['1.5s', 1500],
    ['2 m', 120_000],
    ['1d', 86_400_000],
  ])('%j is %i ms', (value, ms) => {
    expect(durationOption(value, 'x')).toBe(ms);
  });

  test.each<unknown>([-1, 1.5, Number.NaN, Number.POSITIVE_INFINITY, '1.5ms', '1 sec', '-1s', '', ' 2 m ', null, undefined, {}, 2 ** 53])(
    '%s is refused with INVALID_OPTION naming the field',
    (value) => {
      const error = thrown(() => durationOption(value, 'store: wait'));
      expect(error.code).toBe('INVALID_OPTION');
      expect(error.message).toMatch(/^\[sluice\] store: wait must be a duration of at least 0 ms \(a whole number of ms or a string like/);
    },
  );

  test('a range bounds it, and the message says the range', () => {
    expect(durationOption('2s', 'x', { min: 1, max: 2000 })).toBe(2000);
    expect(thrown(() => durationOption('3s', 'x', { min: 1, max: 2000 })).message).toMatch(
      /x must be a duration from 1 to 2000 ms .*got "3s"$/,
    );
    expect(thrown(() => durationOption(0, 'x', { min: 1 })).message).toMatch(/x must be a duration of at least 1 ms .*got 0$/);
  });
});
