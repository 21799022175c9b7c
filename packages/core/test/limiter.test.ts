import { describe, expect, test } from 'vitest';
import {
  createLimiter,
  fixedWindow,
  gcra,
  leakyBucket,
  slidingWindowCounter,
  slidingWindowLog,
  tokenBucket,
  SluiceError,
  type Rule,
  type Store,
} from '../src/index.js';
import { evaluate, type LimitRequest } from '../src/store/index.js';
import { AsyncMapStore, MapStore } from './support/map-store.js';
import { CLOCK_START, harness } from './support/scenario.js';

const SECOND = 1_000;
const DAY = 86_400_000;

/** One rule of every kind, each with capacity 5. */
const everyAlgorithm: Array<[string, () => Rule]> = [
  ['fixed window', () => fixedWindow({ limit: 5, window: '1m' })],
  ['fixed window, staggered', () => fixedWindow({ limit: 5, window: '1m', stagger: true })],
  ['sliding window log', () => slidingWindowLog({ limit: 5, window: '1m' })],
  ['sliding window counter', () => slidingWindowCounter({ limit: 5, window: '1m' })],
  ['token bucket', () => tokenBucket({ capacity: 5, refillRate: 1 })],
  ['token bucket, interval refill', () => tokenBucket({ capacity: 5, refillRate: 1, refill: 'interval' })],
  ['leaky bucket', () => leakyBucket({ capacity: 5, leakRate: 1 })],
  ['gcra', () => gcra({ limit: 1, period: '1s', burst: 5 })],
];

describe('compound rules ("10 per second and 15 per day") are all-or-nothing', () => {
  const rules = () => [fixedWindow({ limit: 10, window: '1s', id: 'second' }), fixedWindow({ limit: 15, window: '1d', id: 'day' })];
  const remainingOf = (d: { rules: readonly { id: string; remaining: number }[] }) =>
    Object.fromEntries(d.rules.map((r) => [r.id, r.remaining]));

  test('a request denied by one rule takes nothing from the other', () => {
    const h = harness(rules());
    for (let i = 0; i < 10; i++) expect(h.limiter.limitSync('u').allowed).toBe(true);
    const denied = h.limiter.limitSync('u');
    expect(denied).toMatchObject({ allowed: false, reason: 'rate_limited', rule: 'second', retryAfter: SECOND });
    // The day rule still has 5, not 4: the denied request did not count there.
    expect(remainingOf(denied)).toEqual({ second: 0, day: 5 });
    expect(denied.rules.find((r) => r.id === 'day')).toMatchObject({ allowed: true });

    h.now = CLOCK_START + SECOND;
    for (let i = 0; i < 5; i++) expect(h.limiter.limitSync('u').allowed).toBe(true);
    const byDay = h.limiter.limitSync('u');
    expect(byDay).toMatchObject({ allowed: false, rule: 'day', retryAfter: DAY - SECOND, resetAt: CLOCK_START + DAY });
    expect(remainingOf(byDay)).toEqual({ second: 5, day: 0 });
    expect(remainingOf(h.limiter.peekSync('u'))).toEqual({ second: 5, day: 0 });
  });

  test('a cost that fits one rule but not the other changes neither', () => {
    const h = harness(rules());
    h.limiter.limitSync('u', { cost: 8 });
    const before = JSON.parse(JSON.stringify([...h.store.records])) as unknown;
    expect(h.limiter.limitSync('u', { cost: 3 })).toMatchObject({ allowed: false, rule: 'second' });
    expect([...h.store.records]).toEqual(before);
    expect(remainingOf(h.limiter.peekSync('u'))).toEqual({ second: 2, day: 7 });
  });

  test('evaluate() writes nothing when any rule denies, and reports the other rules untouched', () => {
    const compound = [tokenBucket({ capacity: 5, refillRate: 1, id: 'tb' }), slidingWindowLog({ limit: 2, window: '1m', id: 'log' })];
    const first = evaluate(compound, [undefined, undefined], CLOCK_START, 2, 'consume');
    expect(first.allowed).toBe(true);
    const states = first.writes!.map((w) => w.state);
    const denied = evaluate(compound, states, CLOCK_START, 1, 'consume');
    expect(denied.allowed).toBe(false);
    expect(denied.writes).toBeUndefined();
    // The token bucket would have allowed; it reports the 3 it still has, not the 2 it would have left.
    expect(denied.outcomes).toMatchObject([
      { id: 'tb', allowed: true, remaining: 3 },
      { id: 'log', allowed: false, remaining: 0, retryAt: CLOCK_START + 60_000 },
    ]);
  });

  test('the deciding rule is the one that denies longest, or when allowed the one with least room', () => {
    const h = harness([tokenBucket({ capacity: 5, refillRate: 1, id: 'fast' }), fixedWindow({ limit: 3, window: '1h', id: 'slow' })]);
    expect(h.limiter.limitSync('u')).toMatchObject({ allowed: true, rule: 'slow', remaining: 2 });
    h.limiter.limitSync('u', { cost: 2 });
    const denied = h.limiter.limitSync('u', { cost: 3 });
    // Both deny; the hourly window frees up last, so it speaks for the request.
    expect(denied.rules.map((r) => r.allowed)).toEqual([false, false]);
    expect(denied).toMatchObject({ rule: 'slow', retryAfter: 3_600_000 });
  });
});

describe('peek, refund and cost', () => {
  test('peek answers without taking anything', () => {
    const h = harness(fixedWindow({ limit: 2, window: '1s' }));
    for (let i = 0; i < 3; i++) expect(h.limiter.peekSync('u')).toMatchObject({ allowed: true, remaining: 2 });
    expect(h.store.writes).toBe(0);
    h.limiter.limitSync('u', { cost: 2 });
    expect(h.limiter.peekSync('u')).toMatchObject({ allowed: false, reason: 'rate_limited', remaining: 0 });
    expect(h.limiter.peekSync('u', { cost: 3 })).toMatchObject({ allowed: false, reason: 'cost_exceeds_limit' });
  });

  test.each(everyAlgorithm)('%s: refund gives capacity back, never beyond full', async (_name, make) => {
    const h = harness(make());
    h.limiter.limitSync('u', { cost: 4 });
    expect(h.limiter.peekSync('u').remaining).toBe(1);
    expect(h.limiter.refundSync('u', { cost: 3 })).toMatchObject({ allowed: true, reason: 'ok', remaining: 4 });
    expect(await h.limiter.refund('u', { cost: 50 })).toMatchObject({ allowed: true, remaining: 5 });
    expect(h.limiter.limitSync('u', { cost: 5 }).allowed).toBe(true);
    expect(h.limiter.limitSync('u').allowed).toBe(false);
  });

  test.each(everyAlgorithm)('%s: cost 0 is a peek and writes nothing', (_name, make) => {
    const h = harness(make());
    expect(h.limiter.limitSync('fresh', { cost: 0 })).toMatchObject({ allowed: true, reason: 'ok', remaining: 5 });
    expect(h.store.records.size).toBe(0);
    h.limiter.limitSync('u', { cost: 5 });
    const writes = h.store.writes;
    expect(h.limiter.limitSync('u', { cost: 0 })).toMatchObject({ allowed: true, remaining: 0 });
    expect(h.limiter.refundSync('u', { cost: 0 })).toMatchObject({ allowed: true, remaining: 0 });
    expect(h.store.writes).toBe(writes);
  });

  test.each(everyAlgorithm)('%s: a cost over capacity is refused at once, forever, and takes nothing', async (_name, make) => {
    const h = harness(make());
    const decision = h.limiter.limitSync('u', { cost: 6 });
    expect(decision).toMatchObject({
      allowed: false,
      reason: 'cost_exceeds_limit',
      retryAfter: Number.POSITIVE_INFINITY,
      limit: 5,
      remaining: 5,
    });
    expect(decision.rules[0]!.retryAt).toBe(-1);
    expect(await h.limiter.limit('u', { cost: 6 })).toMatchObject({ reason: 'cost_exceeds_limit' });
    expect(h.store.writes).toBe(0);
    expect(h.limiter.limitSync('u', { cost: 5 })).toMatchObject({ allowed: true, remaining: 0 });
  });

  test('the limiter sends cost 0 to the store as a peek, whatever the method', () => {
    const h = harness(fixedWindow({ limit: 3, window: '1m' }));
    h.limiter.limitSync('u', { cost: 0 });
    expect(h.store.last).toMatchObject({ cost: 0, operation: 'peek' });
    h.limiter.refundSync('u', { cost: 0 });
    expect(h.store.last).toMatchObject({ cost: 0, operation: 'peek' });
    h.limiter.limitSync('u', { cost: 1 });
    expect(h.store.last).toMatchObject({ cost: 1, operation: 'consume' });
  });

  test('evaluate() never writes for cost 0, in any step operation, for one rule or several', () => {
    const one = [fixedWindow({ limit: 3, window: '1m' })];
    const two = [...one, tokenBucket({ capacity: 2, refillRate: 1 })];
    for (const rules of [one, two]) {
      for (const operation of ['consume', 'peek', 'refund'] as const) {
        const fresh = evaluate(
          rules,
          rules.map(() => undefined),
          CLOCK_START,
          0,
          operation,
        );
        expect(fresh, `${rules.length} rule(s), ${operation}`).toMatchObject({ allowed: true, writes: undefined });
      }
      expect(
        evaluate(
          rules,
          rules.map(() => undefined),
          CLOCK_START,
          1,
          'consume',
        ).writes,
      ).toHaveLength(rules.length);
      expect(
        evaluate(
          rules,
          rules.map(() => undefined),
          CLOCK_START,
          1,
          'peek',
        ).writes,
      ).toBeUndefined();
    }
  });

  test('cost 0 on compound rules is a peek too: no write, and it reports the strictest rule', () => {
    const h = harness([fixedWindow({ limit: 3, window: '1m', id: 'minute' }), tokenBucket({ capacity: 5, refillRate: 1, id: 'bucket' })]);
    expect(h.limiter.limitSync('u', { cost: 0 })).toMatchObject({ allowed: true, rule: 'minute', remaining: 3 });
    expect(h.limiter.refundSync('u', { cost: 0 }).allowed).toBe(true);
    expect(h.store.writes).toBe(0);
    h.limiter.limitSync('u', { cost: 3 });
    expect(h.limiter.limitSync('u', { cost: 0 })).toMatchObject({ allowed: true, rule: 'minute', remaining: 0 });
    expect(h.store.writes).toBe(2);
  });

  test("in a compound request, a cost over one rule's capacity is reported by that rule", () => {
    const h = harness([fixedWindow({ limit: 100, window: '1h', id: 'hour' }), tokenBucket({ capacity: 3, refillRate: 1, id: 'burst' })]);
    expect(h.limiter.limitSync('u', { cost: 4 })).toMatchObject({
      reason: 'cost_exceeds_limit',
      rule: 'burst',
      retryAfter: Number.POSITIVE_INFINITY,
    });
    expect(h.limiter.peekSync('u').rules.map((r) => r.remaining)).toEqual([100, 3]);
  });
});

describe('keys', () => {
  test('limiters with different names, or different prefixes, never share state on one store', () => {
    const store = new MapStore();
    const rules = fixedWindow({ limit: 1, window: '1m', id: 'fw' });
    const make = (name: string, prefix?: string) => createLimiter({ store, rules, name, prefix, clock: () => CLOCK_START });
    const a = make('a');
    expect(a.limitSync('u').allowed).toBe(true);
    expect(a.limitSync('u').allowed).toBe(false);
    expect(make('b').limitSync('u').allowed).toBe(true);
    expect(make('a', 'other').limitSync('u').allowed).toBe(true);
    expect(a.limitSync('v').allowed).toBe(true);
    expect(make('a').limitSync('u').allowed).toBe(false); // same name and prefix: same state
    expect([...store.records.keys()].sort()).toEqual(['other:a:{u}:fw', 'sluice:a:{u}:fw', 'sluice:a:{v}:fw', 'sluice:b:{u}:fw']);
  });

  test('reset forgets an identity in every rule, and only that identity', async () => {
    const h = harness([fixedWindow({ limit: 1, window: '1m' }), tokenBucket({ capacity: 1, refillRate: 1 })]);
    h.limiter.limitSync('u');
    h.limiter.limitSync('v');
    await h.limiter.reset('u');
    expect(h.limiter.limitSync('u').allowed).toBe(true);
    expect(h.limiter.limitSync('v').allowed).toBe(false);
  });
});

describe('modes', () => {
  test("'shadow' counts and reports a would-be denial but lets it through", async () => {
    const h = harness(fixedWindow({ limit: 1, window: '1m' }));
    h.limiter.configure({ mode: 'shadow' });
    expect(h.limiter.limitSync('u')).toMatchObject({ allowed: true, reason: 'ok' });
    const shadowed = h.limiter.limitSync('u');
    expect(shadowed).toMatchObject({ allowed: true, reason: 'shadow', remaining: 0, degraded: false });
    expect(shadowed.rules[0]!.allowed).toBe(false);
    expect(await h.limiter.limit('u')).toMatchObject({ allowed: true, reason: 'shadow' });
    h.limiter.configure({ mode: 'enforce' });
    expect(h.limiter.limitSync('u')).toMatchObject({ allowed: false, reason: 'rate_limited' });
  });

  test("'off' allows everything without touching the store, and keeps the counters for later", async () => {
    const h = harness(fixedWindow({ limit: 1, window: '1m' }));
    h.limiter.limitSync('u');
    const calls = h.store.calls;
    h.limiter.configure({ mode: 'off' });
    expect(h.limiter.mode).toBe('off');
    for (let i = 0; i < 3; i++) expect(h.limiter.limitSync('u')).toMatchObject({ allowed: true, reason: 'disabled', degraded: false });
    expect(await h.limiter.limit('u')).toMatchObject({ allowed: true, reason: 'disabled' });
    expect(h.store.calls).toBe(calls);
    h.limiter.configure({ mode: 'enforce' });
    expect(h.limiter.limitSync('u').allowed).toBe(false);
  });

  test('mode is also accepted at construction', () => {
    const store = new MapStore();
    const limiter = createLimiter({ store, rules: fixedWindow({ limit: 1, window: '1m' }), mode: 'off' });
    expect(limiter.limitSync('u').reason).toBe('disabled');
    expect(store.calls).toBe(0);
  });
});

describe('configure() at run time', () => {
  test('keeps the counters of a rule whose id stays the same, starts fresh for a new id', () => {
    const h = harness(fixedWindow({ limit: 5, window: '1m', id: 'per-minute' }));
    h.limiter.limitSync('u', { cost: 3 });
    h.limiter.configure({ rules: fixedWindow({ limit: 10, window: '1m', id: 'per-minute' }) });
    expect(h.limiter.rules[0]!.limit).toBe(10);
    expect(h.limiter.peekSync('u').remaining).toBe(7);
    h.limiter.configure({ rules: fixedWindow({ limit: 10, window: '1m', id: 'renamed' }) });
    expect(h.limiter.peekSync('u').remaining).toBe(10);
    h.limiter.configure({ rules: fixedWindow({ limit: 4, window: '1m', id: 'per-minute' }) });
    expect(h.limiter.peekSync('u').remaining).toBe(1);
  });

  test('an invalid change throws and leaves the limiter as it was', () => {
    const h = harness(fixedWindow({ limit: 5, window: '1m' }));
    const rules = h.limiter.rules;
    expect(() => h.limiter.configure({ rules: [] })).toThrow(/rules/);
    expect(() => h.limiter.configure({ mode: 'loud' as 'off' })).toThrow(/mode/);
    expect(h.limiter.rules).toBe(rules);
    expect(h.limiter.mode).toBe('enforce');
  });
});

describe('quotaFor(identity)', () => {
  const standard = fixedWindow({ limit: 2, window: '1m', id: 'fw' });
  const premium = [fixedWindow({ limit: 5, window: '1m', id: 'fw' })];

  test("gives chosen identities their own rules; undefined means the limiter's rules", async () => {
    const store = new MapStore();
    const limiter = createLimiter({
      store,
      rules: standard,
      clock: () => CLOCK_START,
      quotaFor: (id) => (id.startsWith('vip:') ? premium : undefined),
    });
    const admitted = (id: string) => {
      let n = 0;
      for (let i = 0; i < 10; i++) n += limiter.limitSync(id).allowed ? 1 : 0;
      return n;
    };
    expect(admitted('vip:1')).toBe(5);
    expect(admitted('user:1')).toBe(2);
    expect(limiter.peekSync('vip:1')).toMatchObject({ limit: 5, remaining: 0 });
    await limiter.reset('vip:1');
    expect(limiter.peekSync('vip:1').remaining).toBe(5);
  });

  test('a quotaFor that returns something other than rules is rejected, naming quotaFor(identity)', () => {
    const limiter = createLimiter({ store: new MapStore(), rules: standard, quotaFor: () => [{}] as unknown as Rule[] });
    expect(() => limiter.limitSync('u')).toThrow(/quotaFor\(identity\)/);
  });
});

describe('stagger', () => {
  test('shifts window boundaries per identity, stably, within one window', () => {
    const rule = fixedWindow({ limit: 1, window: '1m', stagger: true });
    const resets = (store: MapStore) => {
      const limiter = createLimiter({ store, rules: rule, clock: () => CLOCK_START });
      return Array.from({ length: 50 }, (_, i) => limiter.limitSync(`user:${i}`).resetAt);
    };
    const first = resets(new MapStore());
    expect(resets(new MapStore())).toEqual(first); // a fresh store (another process) agrees
    expect(new Set(first).size).toBeGreaterThan(40);
    for (const resetAt of first) {
      expect(resetAt).toBeGreaterThan(CLOCK_START);
      expect(resetAt).toBeLessThanOrEqual(CLOCK_START + 60_000);
    }
    // Without stagger every identity resets at the same instant.
    const aligned = createLimiter({ store: new MapStore(), rules: fixedWindow({ limit: 1, window: '1m' }), clock: () => CLOCK_START });
    expect(new Set(Array.from({ length: 10 }, (_, i) => aligned.limitSync(`user:${i}`).resetAt))).toEqual(new Set([CLOCK_START + 60_000]));
  });

  test('a staggered identity really gets a full window at its own boundary', () => {
    const h = harness(fixedWindow({ limit: 1, window: '1m', stagger: true }));
    const resetAt = h.limiter.limitSync('someone').resetAt;
    h.now = resetAt - 1;
    expect(h.limiter.limitSync('someone')).toMatchObject({ allowed: false, retryAfter: 1 });
    h.now = resetAt;
    expect(h.limiter.limitSync('someone')).toMatchObject({ allowed: true, resetAt: resetAt + 60_000 });
  });
});

describe('asynchronous stores', () => {
  test('limit, peek, refund and reset work through promises', async () => {
    const store = new AsyncMapStore();
    const limiter = createLimiter({ store, rules: fixedWindow({ limit: 2, window: '1m' }), clock: () => CLOCK_START });
    expect(await limiter.limit('u', { cost: 2 })).toMatchObject({ allowed: true, remaining: 0 });
    expect(await limiter.peek('u')).toMatchObject({ allowed: false, reason: 'rate_limited' });
    expect(await limiter.refund('u')).toMatchObject({ remaining: 1 });
    await limiter.reset('u');
    expect(await limiter.peek('u')).toMatchObject({ remaining: 2 });
  });

  test('limitSync over an async store fails loudly instead of returning a promise', () => {
    const limiter = createLimiter({ store: new AsyncMapStore(), rules: fixedWindow({ limit: 2, window: '1m' }) });
    expect(() => (limiter as unknown as { limitSync(id: string): unknown }).limitSync('u')).toThrow(
      expect.objectContaining({ code: 'UNSUPPORTED_OPERATION' }),
    );
  });
});

describe('per-call options are checked', () => {
  test('a number or an unknown option is refused instead of silently costing 1', async () => {
    const limiter = createLimiter({ store: new MapStore(), rules: fixedWindow({ limit: 5, window: '1s' }), clock: () => 0 });
    await expect(limiter.limit('a', 5 as never)).rejects.toMatchObject({ code: 'INVALID_OPTION' });
    await expect(limiter.limit('a', { weight: 5 } as never)).rejects.toMatchObject({
      code: 'UNKNOWN_OPTION',
      message: expect.stringMatching(/weight/),
    });
    expect((await limiter.limit('a', { cost: 2 })).remaining).toBe(3);
  });
});

describe('a store that answers without its shared state (result.error)', () => {
  test('the decision keeps the store outcome and is degraded with that error, synchronously and not', async () => {
    const error = new SluiceError('STORE_ERROR', 'the remote store is down; answered on the local share');
    const rule = fixedWindow({ limit: 3, window: '1s' });
    for (const synchronous of [true, false]) {
      const store = {
        capabilities: { synchronous, clock: 'client', operations: ['limit', 'reset'] },
        limit(request: LimitRequest) {
          const result = { ...evaluateResult(request), error };
          return synchronous ? result : Promise.resolve(result);
        },
        reset: () => undefined,
      } as const;
      const limiter = createLimiter({ store: store as unknown as Store, rules: rule, clock: () => CLOCK_START });
      const decision = await limiter.limit('a');
      expect(decision).toMatchObject({ allowed: true, remaining: 2, degraded: true, reason: 'ok' });
      expect(decision.error).toBe(error);
    }
  });
});

function evaluateResult(request: LimitRequest) {
  const evaluation = evaluate(
    request.rules,
    request.rules.map(() => undefined),
    request.now,
    request.cost,
    request.operation,
  );
  return { now: request.now, outcomes: evaluation.outcomes };
}
