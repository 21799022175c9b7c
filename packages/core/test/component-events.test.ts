/**
 * `onDecision` on the concurrency limiter and the two load shedders (metrics and events): one event per
 * decision, carrying the component, its name, what was decided and how long it took; an observer's exception never
 * reaches the caller; unset, no clock is read and no event is built. createLimiter's own `onDecision` is tested in
 * limiter.test.ts.
 */
import { afterEach, describe, expect, test, vi } from 'vitest';
import type { Store } from '../src/index.js';
import { createConcurrencyLimiter, type ConcurrencyLimiterOptions } from '../src/concurrency/index.js';
import {
  createFleetShedder,
  createUtilizationShedder,
  type FleetShedderOptions,
  type UtilizationShedderOptions,
} from '../src/shedding/index.js';
import type { FleetEvent } from '../src/shedding/fleet-shedder.js';
import type { LeaseEvent } from '../src/concurrency/concurrency-limiter.js';
import type { ShedEvent } from '../src/shedding/utilization-shedder.js';
import { evaluateLease, type LeaseEntries, type LeaseRequest, type LeaseResult } from '../src/store/index.js';

const CLOCK_START = 1_700_000_000_000;

/** A lease store over a Map, answering with a promise; `failing` makes every call reject. */
class LeaseStore implements Store {
  readonly capabilities = { synchronous: false, clock: 'client', operations: ['limit', 'reset', 'lease'] } as const;
  private readonly records = new Map<string, LeaseEntries>();
  failing = false;

  limit(): never {
    throw new Error('not used');
  }

  reset(): void {}

  lease(request: LeaseRequest): Promise<LeaseResult> {
    if (this.failing) return Promise.reject(new Error('connection reset'));
    const evaluation = evaluateLease(this.records.get(request.key), request, request.now);
    this.records.set(request.key, evaluation.entries);
    return Promise.resolve(evaluation.result);
  }
}

/** Collects what an observer is handed. */
function recorder<E>() {
  const events: E[] = [];
  return { events, observe: (event: E) => void events.push(event) };
}

/** performance.now() as the components read it (they hold the runtime's performance object, not a copy of now). */
function spyPerformanceNow() {
  return vi.spyOn(globalThis.performance, 'now');
}

afterEach(() => {
  vi.restoreAllMocks();
});

describe('createConcurrencyLimiter onDecision', () => {
  function concurrency(options: Partial<ConcurrencyLimiterOptions> = {}) {
    const store = new LeaseStore();
    const seen = recorder<LeaseEvent>();
    const limiter = createConcurrencyLimiter({
      store,
      limit: 1,
      clock: () => CLOCK_START,
      circuitBreaker: false,
      onDecision: seen.observe,
      ...options,
    });
    return { store, limiter, events: seen.events };
  }

  test('one event per acquire, for every reason: the same decision the caller got, the limiter, the identity', async () => {
    const { store, limiter, events } = concurrency({ name: 'uploads' });
    const decisions = [await limiter.acquire('alice'), await limiter.acquire('alice')];
    limiter.configure({ mode: 'shadow' });
    decisions.push(await limiter.acquire('alice'));
    limiter.configure({ mode: 'off' });
    decisions.push(await limiter.acquire('alice'));
    limiter.configure({ mode: 'enforce' });
    store.failing = true;
    decisions.push(await limiter.acquire('bob'));

    expect(decisions.map((d) => d.reason)).toEqual(['ok', 'concurrency_limited', 'shadow', 'disabled', 'store_unavailable']);
    expect(events).toHaveLength(decisions.length);
    events.forEach((event, i) => {
      expect(event).toMatchObject({
        component: 'concurrency',
        limiter: 'uploads',
        operation: 'acquire',
        identity: i < 4 ? 'alice' : 'bob',
      });
      expect(event.decision).toBe(decisions[i]);
      expect(event.durationMs).toBeGreaterThanOrEqual(0);
    });
    expect(events[4]!.decision).toMatchObject({ degraded: true, allowed: true });
  });

  test('durationMs spans the store call: from before the call to after its answer', async () => {
    const store = new LeaseStore();
    const seen = recorder<LeaseEvent>();
    let ticks = 0;
    const now = spyPerformanceNow().mockImplementation(() => (ticks += 7));
    const slow: Store = Object.assign(Object.create(store) as Store, {
      lease(request: LeaseRequest) {
        ticks += 100; // the store "takes" 100 ms
        return store.lease(request);
      },
    });
    const limiter = createConcurrencyLimiter({ store: slow, limit: 1, clock: () => CLOCK_START, onDecision: seen.observe });
    await limiter.acquire('a');
    expect(now).toHaveBeenCalledTimes(2);
    expect(seen.events[0]!.durationMs).toBe(107);
  });

  test("an observer's exception is swallowed: the caller gets its decision, later decisions are still reported", async () => {
    let calls = 0;
    const { limiter } = concurrency({
      onDecision: () => {
        calls++;
        throw new Error('exporter down');
      },
    });
    await expect(limiter.acquire('a')).resolves.toMatchObject({ allowed: true, reason: 'ok' });
    await expect(limiter.acquire('a')).resolves.toMatchObject({ allowed: false, reason: 'concurrency_limited' });
    expect(calls).toBe(2);
  });

  test('unset, no clock is read for the event; a call that throws decided nothing and reports nothing', async () => {
    const now = spyPerformanceNow();
    const plain = createConcurrencyLimiter({ store: new LeaseStore(), limit: 1, clock: () => CLOCK_START });
    await plain.acquire('a');
    expect(now).not.toHaveBeenCalled();

    const { limiter, events } = concurrency();
    await expect(limiter.acquire('a', { signal: 'nope' as never })).rejects.toMatchObject({ code: 'INVALID_OPTION' });
    expect(events).toEqual([]);
  });

  test('an onDecision that is not a function is refused, naming the field', () => {
    expect(() => createConcurrencyLimiter({ store: new LeaseStore(), limit: 1, onDecision: 'log' as never })).toThrow(
      /createConcurrencyLimiter: onDecision must be a function \(event\) => void, got/,
    );
  });
});

describe('createFleetShedder onDecision', () => {
  function fleet(options: Partial<FleetShedderOptions> = {}) {
    const store = new LeaseStore();
    const seen = recorder<FleetEvent>();
    const shedder = createFleetShedder({
      store,
      capacity: 2,
      reserve: 0.5,
      classes: ['critical', 'normal'],
      clock: () => CLOCK_START,
      circuitBreaker: false,
      onDecision: seen.observe,
      ...options,
    });
    return { store, shedder, events: seen.events };
  }

  test('one event per acquire with the class, the fleet name and `shed` refusals; its per-class limiters report nothing of their own', async () => {
    const { store, shedder, events } = fleet();
    expect(shedder.name).toBe('fleet');
    const decisions = [
      await shedder.acquire('normal'),
      await shedder.acquire('normal'),
      await shedder.acquire('critical'),
      await shedder.acquire('critical'),
    ];
    shedder.configure({ mode: 'shadow' });
    decisions.push(await shedder.acquire('normal'));
    shedder.configure({ mode: 'off' });
    decisions.push(await shedder.acquire('critical'));
    shedder.configure({ mode: 'enforce' });
    store.failing = true;
    decisions.push(await shedder.acquire('normal'));

    expect(decisions.map((d) => d.reason)).toEqual(['ok', 'shed', 'ok', 'shed', 'shadow', 'disabled', 'store_unavailable']);
    expect(events.map((e) => e.priority)).toEqual(['normal', 'normal', 'critical', 'critical', 'normal', 'critical', 'normal']);
    events.forEach((event, i) => {
      expect(event).toMatchObject({ component: 'fleet', limiter: 'fleet', operation: 'acquire' });
      expect(event.decision).toBe(decisions[i]);
      expect(event.durationMs).toBeGreaterThanOrEqual(0);
    });
  });

  test('the name option names the fleet in its events', async () => {
    const { shedder, events } = fleet({ name: 'api-fleet' });
    await shedder.acquire('critical');
    expect(shedder.name).toBe('api-fleet');
    expect(events[0]).toMatchObject({ limiter: 'api-fleet' });
  });

  test("an observer's exception is swallowed; an unknown class is a rejection and no event; unset, no clock is read", async () => {
    const { shedder } = fleet({
      onDecision: () => {
        throw new Error('exporter down');
      },
    });
    await expect(shedder.acquire('critical')).resolves.toMatchObject({ allowed: true });

    const { shedder: observed, events } = fleet();
    await expect(observed.acquire('batch')).rejects.toThrow(/unknown priority class "batch"/);
    expect(events).toEqual([]);

    const now = spyPerformanceNow();
    await fleet({ onDecision: undefined }).shedder.acquire('critical');
    expect(now).not.toHaveBeenCalled();
    expect(() => fleet({ onDecision: 42 as never })).toThrow(/createFleetShedder: onDecision must be a function \(event\) => void, got/);
  });
});

describe('createUtilizationShedder onDecision', () => {
  /** Overloaded from the first sample, no delay, one-second ramp: two classes, the second is shed from the second sample on. */
  function utilization(options: Partial<UtilizationShedderOptions> = {}) {
    const state = { now: CLOCK_START };
    const seen = recorder<ShedEvent>();
    const shedder = createUtilizationShedder({
      classes: ['critical', 'batch'],
      signal: () => 1,
      delay: 0,
      rampUp: '1s',
      sampleEvery: '1s',
      clock: () => state.now,
      random: () => 0.5,
      onDecision: seen.observe,
      ...options,
    });
    return { state, shedder, events: seen.events };
  }

  test('one event per check for every reason, with the class and the shedder name', () => {
    const { state, shedder, events } = utilization();
    const decisions = [shedder.check('batch')];
    state.now += 1000;
    decisions.push(shedder.check('batch'), shedder.check('critical'));
    shedder.configure({ mode: 'shadow' });
    decisions.push(shedder.check('batch'));
    shedder.configure({ mode: 'off' });
    decisions.push(shedder.check('batch'));

    expect(decisions.map((d) => d.reason)).toEqual(['ok', 'shed', 'ok', 'shadow', 'disabled']);
    expect(events.map((e) => e.priority)).toEqual(['batch', 'batch', 'critical', 'batch', 'batch']);
    events.forEach((event, i) => {
      expect(event).toMatchObject({ component: 'utilization', limiter: 'utilization', operation: 'check' });
      expect(event.decision).toBe(decisions[i]);
    });
  });

  test("durationMs includes the signal's read; the name option names the shedder; a bad name is refused, naming the field", () => {
    let ticks = 0;
    spyPerformanceNow().mockImplementation(() => (ticks += 1));
    const { shedder, events } = utilization({
      name: 'worker-1',
      signal: () => {
        ticks += 40; // a slow signal
        return 0.5;
      },
    });
    shedder.check('batch');
    expect(shedder.name).toBe('worker-1');
    expect(events[0]).toMatchObject({ limiter: 'worker-1', durationMs: 41 });
    expect(() => utilization({ name: 'has space' })).toThrow(
      /createUtilizationShedder: name must be 1 to 64 characters of letters, digits/,
    );
  });

  test("an observer's exception is swallowed; a check that throws reports nothing; unset, no clock is read", () => {
    const { shedder } = utilization({
      onDecision: () => {
        throw new Error('exporter down');
      },
    });
    expect(shedder.check('critical')).toMatchObject({ allowed: true, reason: 'ok' });

    const { shedder: observed, events } = utilization();
    expect(() => observed.check('read')).toThrow(/unknown priority class "read"/);
    expect(events).toEqual([]);

    const now = spyPerformanceNow();
    const plain = utilization({ onDecision: undefined }).shedder;
    plain.check('batch');
    expect(now).not.toHaveBeenCalled();
    expect(() => utilization({ onDecision: {} as never })).toThrow(
      /createUtilizationShedder: onDecision must be a function \(event\) => void, got/,
    );
  });
});
