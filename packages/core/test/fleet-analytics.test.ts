/**
 * createFleetAnalytics: decisions are counted per limiter name and second by outcome, exactly; the refused identities are
 * kept up to topK per second; the timer publishes each complete second once, at most one publish per name per
 * second; a failed publish loses nothing and is retried; stop() publishes the current second. A fake clock and
 * vitest's fake timers drive it; nothing sleeps.
 */
import { afterEach, beforeEach, describe, expect, test, vi } from 'vitest';
import { createLimiter, fixedWindow, type Decision, type DecisionEvent, type SyncStore } from '../src/index.js';
import { createUtilizationShedder } from '../src/shedding/index.js';
import {
  createFleetAnalytics,
  type AnalyticsOutcome,
  type AnalyticsSecond,
  type AnalyticsStore,
  type FleetAnalyticsOptions,
} from '../src/analytics/index.js';
import { MapStore } from './support/map-store.js';

const CLOCK_START = 1_700_000_000_000;

const ALLOWED: Decision = {
  allowed: true,
  reason: 'ok',
  limit: 1,
  remaining: 0,
  resetAt: 0,
  retryAfter: 0,
  degraded: false,
  rule: 'r',
  rules: [],
  now: 0,
};
/** The fake clock every test shares: the limiters', the observer's `now`, and the time of the hand-made events. */
const time = { now: CLOCK_START };
const event = (
  identity: string,
  decision: Partial<Decision> = {},
  operation: DecisionEvent['operation'] = 'limit',
  limiter = 'api',
): DecisionEvent => ({ limiter, operation, identity, decision: { ...ALLOWED, now: time.now, ...decision }, durationMs: 0 });
const refused = (identity: string, limiter = 'api') => event(identity, { allowed: false, reason: 'rate_limited' }, 'limit', limiter);

/** A store that records every publish, and fails while `failing` is set (after the call, as a network would). */
class RecordingStore implements AnalyticsStore {
  readonly calls: { name: string; seconds: readonly AnalyticsSecond[]; at: number }[] = [];
  readonly kept: { name: string; second: AnalyticsSecond }[] = [];
  failing = false;
  constructor(private readonly time: { now: number }) {}
  publish(name: string, seconds: readonly AnalyticsSecond[]): Promise<void> {
    this.calls.push({ name, seconds, at: this.time.now });
    if (this.failing) return Promise.reject(new Error('store down'));
    for (const second of seconds) this.kept.push({ name, second });
    return Promise.resolve();
  }
  read(): readonly AnalyticsSecond[] {
    return [];
  }
  names(): readonly string[] {
    return [];
  }
  /** Sum of every kept count of `outcome` for `name`. */
  total(name: string, outcome: AnalyticsOutcome): number {
    return this.kept.filter((k) => k.name === name).reduce((sum, k) => sum + k.second.counts[outcome], 0);
  }
}

function setup(options: Partial<FleetAnalyticsOptions> = {}) {
  const store = new RecordingStore(time);
  const errors: unknown[] = [];
  const analytics = createFleetAnalytics({ store, now: () => time.now, onError: (e) => void errors.push(e), ...options });
  /** Moves the fake clock and the fake timers together. */
  const advance = async (ms: number) => {
    time.now += ms;
    await vi.advanceTimersByTimeAsync(ms);
  };
  return { time, store, errors, analytics, advance };
}

beforeEach(() => {
  time.now = CLOCK_START;
  vi.useFakeTimers({ toFake: ['setInterval', 'clearInterval', 'setTimeout', 'clearTimeout'] });
});
afterEach(() => {
  vi.useRealTimers();
});

describe('createFleetAnalytics', () => {
  test('counts each second exactly by outcome, and publishes it once it is complete', async () => {
    const { store, analytics, advance, errors } = setup();
    for (let i = 0; i < 7; i++) analytics.onDecision(event('a'));
    for (let i = 0; i < 3; i++) analytics.onDecision(refused('b'));
    analytics.onDecision(event('c', { reason: 'shadow' }));
    analytics.onDecision(event('d', { degraded: true, reason: 'store_unavailable', allowed: false }));
    analytics.onDecision(event('e', { degraded: true, reason: 'store_unavailable', allowed: true }));
    await advance(500); // still the same second: nothing complete, nothing published
    analytics.onDecision(event('a'));
    expect(store.calls).toEqual([]);
    await advance(600); // second CLOCK_START/1000 + 1: the first is complete
    expect(store.calls).toHaveLength(1);
    expect(store.calls[0]!.name).toBe('api');
    expect(store.calls[0]!.seconds).toEqual([
      {
        second: CLOCK_START / 1000,
        counts: { allowed: 8, limited: 3, shadowLimited: 1, shed: 0, degraded: 2 },
        topLimited: [['b', 3]],
      },
    ]);
    await analytics.stop();
    expect(errors).toEqual([]);
  });

  test('counts limit, take and reserve; peek and refund are not requests and are left out', async () => {
    const { store, analytics } = setup();
    for (const operation of ['limit', 'take', 'reserve', 'peek', 'refund'] as const) analytics.onDecision(event('a', {}, operation));
    await analytics.stop();
    expect(store.total('api', 'allowed')).toBe(3);
  });

  test('a real limiter in shadow mode counts shadowLimited; a failing store counts degraded', async () => {
    const { store, analytics, time } = setup();
    const rules = fixedWindow({ id: 'w', limit: 1, window: '1h' });
    const shadow = createLimiter({
      store: new MapStore(),
      rules,
      name: 'shadow',
      mode: 'shadow',
      clock: () => time.now,
      onDecision: analytics.onDecision,
    });
    for (let i = 0; i < 3; i++) shadow.limitSync('x');
    const broken: SyncStore = Object.assign(new MapStore(), {
      limit(): never {
        throw new Error('down');
      },
    });
    const failing = createLimiter({ store: broken, rules, name: 'failing', clock: () => time.now, onDecision: analytics.onDecision });
    for (let i = 0; i < 2; i++) failing.limitSync('x');
    await analytics.stop();
    expect(['allowed', 'shadowLimited', 'limited'].map((o) => store.total('shadow', o as AnalyticsOutcome))).toEqual([1, 2, 0]);
    expect(store.total('failing', 'degraded')).toBe(2);
    expect(store.total('failing', 'allowed')).toBe(0);
  });

  test('sheds: onShed counts a shedder’s sheds under its name, recordShed under any name', async () => {
    const { store, analytics, time, advance } = setup();
    const shedder = createUtilizationShedder({
      signal: () => 1,
      classes: ['critical', 'read'],
      clock: () => time.now,
      random: () => 0,
      delay: 0,
      rampUp: '1s',
      onDecision: analytics.onShed,
    });
    for (let s = 0; s < 4; s++) {
      for (let i = 0; i < 10; i++) shedder.check('read');
      await advance(1_000);
    }
    analytics.recordShed('api');
    await analytics.stop();
    expect(store.total('api', 'shed')).toBe(1);
    const shed = store.total('utilization', 'shed');
    expect(shed).toBeGreaterThan(0);
    expect(store.total('utilization', 'allowed')).toBe(0); // a shedder's passes are not counted: the limiter counts them
  });

  test('keeps at most topK limited identities per second, most limited first; the rest are counted as dropped', async () => {
    const { store, analytics } = setup({ topK: 3 });
    for (const [identity, times] of [
      ['a', 1],
      ['b', 4],
      ['c', 2],
      ['d', 9],
      ['e', 1],
    ] as const) {
      for (let i = 0; i < times; i++) analytics.onDecision(refused(identity));
    }
    expect(analytics.stats()).toMatchObject({ droppedIdentities: 10, pendingSeconds: 1 });
    await analytics.stop();
    const [published] = store.kept;
    expect(published!.second.counts.limited).toBe(17);
    expect(published!.second.topLimited).toEqual([
      ['b', 4],
      ['c', 2],
      ['a', 1],
    ]);
  });

  test('at most one publish per name per second, every name with its own, each second once', async () => {
    const { store, analytics, advance } = setup();
    for (let s = 0; s < 5; s++) {
      for (let i = 0; i < 10; i++) {
        analytics.onDecision(event('a', {}, 'limit', 'one'));
        analytics.onDecision(event('a', {}, 'limit', 'two'));
        await advance(100);
      }
    }
    for (const name of ['one', 'two']) {
      const calls = store.calls.filter((c) => c.name === name);
      for (let i = 1; i < calls.length; i++) expect(calls[i]!.at - calls[i - 1]!.at).toBeGreaterThanOrEqual(1_000);
      expect(store.total(name, 'allowed')).toBe(50); // the last advance ended at the sixth second: all five complete
      const seconds = store.kept.filter((k) => k.name === name).map((k) => k.second.second);
      expect(new Set(seconds).size).toBe(seconds.length);
    }
    analytics.onDecision(event('a', {}, 'limit', 'one'));
    await analytics.stop();
    expect(store.total('one', 'allowed')).toBe(51);
  });

  test('a failed publish keeps its seconds and the next tick publishes them, nothing lost or counted twice', async () => {
    const { store, analytics, advance, errors } = setup();
    store.failing = true;
    for (let s = 0; s < 3; s++) {
      for (let i = 0; i < 5; i++) analytics.onDecision(refused('x'));
      await advance(1_000);
    }
    expect(errors.length).toBeGreaterThanOrEqual(2);
    expect(store.kept).toEqual([]);
    store.failing = false;
    await advance(1_000);
    expect(store.total('api', 'limited')).toBe(15);
    expect(store.kept.map((k) => k.second.second)).toEqual([CLOCK_START / 1000, CLOCK_START / 1000 + 1, CLOCK_START / 1000 + 2]);
    expect(store.kept.map((k) => k.second.topLimited)).toEqual([[['x', 5]], [['x', 5]], [['x', 5]]]);
    await analytics.stop();
    expect(store.total('api', 'limited')).toBe(15);
    expect(analytics.stats()).toEqual({ droppedIdentities: 0, droppedSeconds: 0, pendingSeconds: 0 });
  });

  test('counts are at least once: a publish the store applied but that failed for the caller (a timeout) is sent again', async () => {
    const { store, analytics, advance, errors } = setup();
    // The store applies the first publish, then its answer is lost: the caller sees a failure.
    const publish = store.publish.bind(store);
    let lost = 1;
    store.publish = (name, seconds) => {
      const applied = publish(name, seconds);
      return lost-- > 0 ? applied.then(() => Promise.reject(new Error('timed out'))) : applied;
    };
    for (let i = 0; i < 5; i++) analytics.onDecision(refused('x'));
    await advance(1_000);
    expect(store.total('api', 'limited')).toBe(5); // applied once already
    expect(errors).toHaveLength(1);
    await advance(1_000);
    // Sent again, the same second: the store now holds it twice (at least once, never lost).
    expect(store.calls.map((c) => c.seconds.map((s) => s.second))).toEqual([[CLOCK_START / 1000], [CLOCK_START / 1000]]);
    expect(store.total('api', 'limited')).toBe(10);
    await analytics.stop();
    expect(analytics.stats()).toEqual({ droppedIdentities: 0, droppedSeconds: 0, pendingSeconds: 0 });
  });

  test('a store that stays down past the retention: its oldest seconds are dropped and counted, memory stays bounded', async () => {
    const { store, analytics, advance } = setup({ retention: '5s' });
    store.failing = true;
    for (let s = 0; s < 12; s++) {
      analytics.onDecision(event('a'));
      await advance(1_000);
    }
    const { droppedSeconds, pendingSeconds } = analytics.stats();
    expect(pendingSeconds).toBeLessThanOrEqual(6);
    expect(droppedSeconds + pendingSeconds).toBe(12);
    store.failing = false;
    await analytics.stop();
    expect(store.total('api', 'allowed')).toBe(pendingSeconds);
  });

  test('a publish throwing synchronously, or an onError that throws, never reaches the decision or the timer', async () => {
    let calls = 0;
    const store: AnalyticsStore = {
      publish() {
        calls++;
        throw new Error('sync failure');
      },
      read: () => [],
      names: () => [],
    };
    const analytics = createFleetAnalytics({
      store,
      now: () => time.now,
      onError: () => {
        throw new Error('handler failure');
      },
    });
    analytics.onDecision(event('a'));
    time.now += 1_000;
    await vi.advanceTimersByTimeAsync(1_000);
    expect(calls).toBe(1);
    expect(() => analytics.onDecision(event('a'))).not.toThrow();
    await expect(analytics.stop()).resolves.toBeUndefined();
    expect(analytics.stats().pendingSeconds).toBe(2);
  });

  test('stop() publishes the current second, stops the timer and ignores later decisions', async () => {
    const { store, analytics, advance } = setup();
    analytics.onDecision(refused('z'));
    await analytics.stop();
    expect(store.kept).toHaveLength(1);
    expect(store.kept[0]!.second.counts.limited).toBe(1);
    analytics.onDecision(event('a'));
    await advance(5_000);
    expect(store.calls).toHaveLength(1);
    expect(vi.getTimerCount()).toBe(0);
  });

  test('flush() publishes the complete seconds, flush({ all: true }) the current one too', async () => {
    const { store, analytics, time } = setup();
    analytics.onDecision(event('a'));
    time.now += 1_000;
    analytics.onDecision(event('a'));
    analytics.onDecision(event('a'));
    await analytics.flush();
    expect(store.kept.map((k) => k.second.counts.allowed)).toEqual([1]);
    await analytics.flush({ all: true });
    expect(store.kept.map((k) => k.second.counts.allowed)).toEqual([1, 2]);
    await analytics.stop();
  });

  test('the default onError warns once per distinct message', async () => {
    const warn = vi.spyOn(console, 'warn').mockImplementation(() => {});
    try {
      const store: AnalyticsStore = { publish: () => Promise.reject(new Error('down')), read: () => [], names: () => [] };
      const analytics = createFleetAnalytics({ store, now: () => time.now });
      for (let s = 0; s < 4; s++) {
        analytics.onDecision(event('a'));
        time.now += 1_000;
        await vi.advanceTimersByTimeAsync(1_000);
      }
      await analytics.stop();
      expect(warn).toHaveBeenCalledTimes(1);
      expect(String(warn.mock.calls[0]![0])).toContain('down');
    } finally {
      warn.mockRestore();
    }
  });

  test('rejects bad options with the fix', () => {
    const store: AnalyticsStore = { publish: () => {}, read: () => [], names: () => [] };
    expect(() => createFleetAnalytics({ store: {} as AnalyticsStore })).toThrow(/store must be an analytics store/);
    expect(() => createFleetAnalytics({ store, topK: 0 })).toThrow(/topK must be a positive integer/);
    expect(() => createFleetAnalytics({ store, retention: 'soon' as '1s' })).toThrow(/retention must be a duration/);
    expect(() => createFleetAnalytics({ store, nope: 1 } as FleetAnalyticsOptions)).toThrow(/unknown option "nope"/);
  });
});
