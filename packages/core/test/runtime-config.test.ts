/**
 * What runtime configuration and metrics build on: rules as JSON specs (ruleSpec / ruleFromSpec, built
 * by the factories themselves), per-identity quotas set by configure(), and the onDecision hook.
 */
import fc from 'fast-check';
import { afterEach, describe, expect, test, vi } from 'vitest';
import {
  createLimiter,
  fixedWindow,
  gcra,
  leakyBucket,
  ruleFromSpec,
  ruleSpec,
  slidingWindowCounter,
  slidingWindowLog,
  tokenBucket,
  type DecisionEvent,
  type Rule,
} from '../src/index.js';
import type { LimitRequest, LimitResult, Store } from '../src/store/index.js';
import { MapStore } from './support/map-store.js';

const duration = fc.integer({ min: 1, max: 86_400_000 });
const small = fc.integer({ min: 1, max: 10_000 });
const id = fc.option(fc.stringMatching(/^[A-Za-z0-9_.:-]{1,64}$/), { nil: undefined });
const anyRule: fc.Arbitrary<Rule> = fc.oneof(
  fc.record({ id, limit: small, window: duration, stagger: fc.boolean() }).map((o) => fixedWindow(o)),
  fc.record({ id, limit: small, window: duration }).map((o) => slidingWindowLog(o)),
  fc.record({ id, limit: small, window: duration }).map((o) => slidingWindowCounter(o)),
  fc
    .record({ id, capacity: small, refillRate: small, interval: duration, refill: fc.constantFrom('smooth' as const, 'interval' as const) })
    .map((o) => tokenBucket(o)),
  fc.record({ id, capacity: small, leakRate: small, interval: duration }).map((o) => leakyBucket(o)),
  fc.record({ id, limit: small, period: duration, burst: small }).map((o) => gcra(o)),
);

describe('rule specs', () => {
  test('ruleFromSpec(ruleSpec(rule)) is the rule, through JSON, for every algorithm', () => {
    fc.assert(
      fc.property(anyRule, (rule) => {
        expect(ruleFromSpec(JSON.parse(JSON.stringify(ruleSpec(rule))))).toEqual(rule);
      }),
    );
  });

  test('a spec is validated by the factory, and the error names the field', () => {
    expect(ruleFromSpec({ algorithm: 'gcra', limit: 10, period: '1s' })).toEqual(gcra({ limit: 10, period: '1s' }));
    expect(() => ruleFromSpec({ algorithm: 'gcra', limit: -1, period: '1s' }, 'rules[0]')).toThrow(
      /rules\[0\]: gcra: limit must be a positive integer, got -1/,
    );
    expect(() => ruleFromSpec({ algorithm: 'gcra', limit: 1, period: 'soon' }, 'rules[0]')).toThrow(/rules\[0\]: gcra: period/);
    expect(() => ruleFromSpec({ algorithm: 'tokenBucket', capacity: 1, refillRate: 1 }, 'q')).toThrow(
      /q\.algorithm must be one of 'fixed-window', .*got "tokenBucket"/,
    );
    expect(() => ruleFromSpec({ algorithm: 'gcra', limit: 1, period: '1s', extra: 1 }, 'r')).toThrow(/r: .*extra/);
    expect(() => ruleFromSpec('gcra:10/1s', 'r')).toThrow(/r must be an object/);
    expect(() => ruleFromSpec(null, 'r')).toThrow(/r must be an object/);
    expect(() => ruleFromSpec([], 'r')).toThrow(/r must be an object/);
  });
});

describe('configure({ quotas })', () => {
  test('an override applies to its identity alone, keeps state by rule id, and an empty map removes it', async () => {
    const limiter = createLimiter({ store: new MapStore(), rules: fixedWindow({ id: 'w', limit: 2, window: '1m' }), clock: () => 1_000 });
    limiter.configure({ quotas: new Map([['vip', [fixedWindow({ id: 'w', limit: 5, window: '1m' })]]]) });
    const count = async (identity: string) => {
      let allowed = 0;
      for (let i = 0; i < 8; i++) if ((await limiter.limit(identity)).allowed) allowed++;
      return allowed;
    };
    expect(await count('vip')).toBe(5);
    expect(await count('someone')).toBe(2);
    expect(limiter.quotas.get('vip')?.[0]?.limit).toBe(5);
    limiter.configure({ quotas: new Map() });
    expect((await limiter.limit('vip')).allowed).toBe(false); // the same rule id: the 5 taken are still counted
    expect(limiter.quotas.size).toBe(0);
  });

  test('configure({ rules }) keeps the quotas; a bad quota is refused whole and names its identity', () => {
    const limiter = createLimiter({ store: new MapStore(), rules: gcra({ limit: 1, period: '1s' }) });
    limiter.configure({ quotas: new Map([['a', gcra({ limit: 9, period: '1s' })]]) });
    limiter.configure({ rules: gcra({ limit: 2, period: '1s' }) });
    expect(limiter.quotas.get('a')?.[0]?.limit).toBe(9);
    expect(() => limiter.configure({ quotas: new Map([['b', []]]) })).toThrow(/quotas\["b"\] must hold at least one rule/);
    expect(() => limiter.configure({ quotas: new Map([['', [gcra({ limit: 1, period: '1s' })]]]) })).toThrow(
      /quotas keys must be non-empty identity strings/,
    );
    expect(() => limiter.configure({ quotas: { a: [] } as never })).toThrow(/quotas must be a Map/);
    expect(limiter.quotas.get('a')?.[0]?.limit).toBe(9);
  });
});

class SlowStore implements Store {
  readonly capabilities = { synchronous: false, clock: 'client', operations: ['limit', 'reset', 'take', 'reserve'] } as const;
  private readonly inner = new MapStore();
  fail = false;
  limit(request: LimitRequest): Promise<LimitResult> {
    if (this.fail) return Promise.reject(new Error('connection reset'));
    return new Promise((resolve) => setTimeout(() => resolve(this.inner.limit(request)), 5));
  }
  reset(key: string, ids: readonly string[]): void {
    this.inner.reset(key, ids);
  }
}

describe('onDecision', () => {
  afterEach(() => {
    vi.restoreAllMocks();
  });

  test('reports every decision of every operation, sync and async, with its duration', async () => {
    const events: DecisionEvent[] = [];
    const sync = createLimiter({
      store: new MapStore(),
      rules: fixedWindow({ limit: 1, window: '1m' }),
      name: 'api',
      onDecision: (e) => events.push(e),
    });
    expect(sync.limitSync('a').allowed).toBe(true);
    expect(sync.limitSync('a').allowed).toBe(false);
    await sync.peek('a');
    await sync.refund('a');
    expect(events.map((e) => [e.limiter, e.operation, e.identity, e.decision.allowed])).toEqual([
      ['api', 'limit', 'a', true],
      ['api', 'limit', 'a', false],
      ['api', 'peek', 'a', false],
      ['api', 'refund', 'a', true],
    ]);
    events.length = 0;
    const store = new SlowStore();
    const remote = createLimiter({
      store,
      rules: gcra({ limit: 10, period: '1s', burst: 1 }),
      onDecision: (e) => events.push(e),
      circuitBreaker: false,
    });
    const decision = await remote.limit('b');
    await remote.take('b', { cost: 3 });
    await remote.reserve('b', { maxWait: '1s' });
    store.fail = true;
    const degraded = await remote.limit('b');
    expect(events.map((e) => e.operation)).toEqual(['limit', 'take', 'reserve', 'limit']);
    expect(events[0]!.decision).toBe(decision);
    expect(events[0]!.durationMs).toBeGreaterThanOrEqual(4);
    expect(events[3]!.decision).toBe(degraded);
    expect(degraded.degraded).toBe(true);
  });

  test('shadow and off decisions are reported as decided; an observer that throws changes nothing', async () => {
    const reasons: string[] = [];
    const limiter = createLimiter({
      store: new MapStore(),
      rules: fixedWindow({ limit: 1, window: '1m' }),
      mode: 'shadow',
      onDecision: (e) => {
        reasons.push(e.decision.reason);
        throw new Error('observer bug');
      },
    });
    limiter.limitSync('a');
    expect(limiter.limitSync('a')).toMatchObject({ allowed: true, reason: 'shadow' });
    limiter.configure({ mode: 'off' });
    await expect(limiter.limit('a')).resolves.toMatchObject({ reason: 'disabled' });
    expect(reasons).toEqual(['ok', 'shadow', 'disabled']);
  });

  test('decisions with and without an observer are the same (the observer only reads)', () => {
    fc.assert(
      fc.property(
        fc.array(fc.tuple(fc.constantFrom('a', 'b'), fc.integer({ min: 0, max: 3 }), fc.integer({ min: -5_000, max: 30_000 })), {
          maxLength: 60,
        }),
        (steps) => {
          let now = 1_000_000;
          const clock = () => now;
          const rules = [tokenBucket({ capacity: 3, refillRate: 1 }), fixedWindow({ limit: 5, window: '10s' })];
          const plain = createLimiter({ store: new MapStore(), rules, clock });
          let seen = 0;
          const observed = createLimiter({ store: new MapStore(), rules, clock, onDecision: () => seen++ });
          for (const [identity, cost, step] of steps) {
            now = Math.max(0, now + step);
            expect(observed.limitSync(identity, { cost })).toEqual(plain.limitSync(identity, { cost }));
          }
          expect(seen).toBe(steps.length);
        },
      ),
    );
  });

  test('unset, no clock is read for it (performance.now is never called); set, it is', async () => {
    const spy = vi.spyOn(globalThis.performance, 'now');
    const plain = createLimiter({ store: new MapStore(), rules: gcra({ limit: 5, period: '1s' }), clock: () => 1_000 });
    plain.limitSync('a');
    await plain.limit('a', { cost: 2 });
    await plain.peek('a');
    await createLimiter({ store: new SlowStore(), rules: gcra({ limit: 5, period: '1s' }), clock: () => 1_000 }).limit('a');
    expect(spy).not.toHaveBeenCalled();
    createLimiter({
      store: new MapStore(),
      rules: gcra({ limit: 5, period: '1s' }),
      clock: () => 1_000,
      onDecision: () => undefined,
    }).limitSync('a');
    expect(spy).toHaveBeenCalledTimes(2);
  });

  test('onDecision must be a function', () => {
    expect(() => createLimiter({ store: new MapStore(), rules: gcra({ limit: 1, period: '1s' }), onDecision: 'log' as never })).toThrow(
      /onDecision must be a function/,
    );
  });
});
