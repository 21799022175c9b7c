/**
 * The failure policy is one unit a caller other than the limiter (the local tier, around its remote
 * store) can put around a store call: `createFailurePolicy(options)` → `{ run, runSync }`, answering the call's
 * own value or a `FailureAnswer` that says why and what to answer. The limiter's use of it is covered by
 * failure-policy.test.ts and limiter-defects.test.ts; these tests drive it directly, with real timers.
 */
import { describe, expect, test } from 'vitest';
import { createLimiter, tokenBucket, type Store } from '../src/index.js';
import { FailureAnswer, createFailurePolicy, type LimitRequest, type LimitResult } from '../src/store/index.js';
import { AsyncMapStore, MapStore } from './support/map-store.js';

const CLOCK_START = Date.UTC(2025, 0, 1);
const rule = tokenBucket({ capacity: 2, refillRate: 1 });
const request: LimitRequest = { key: 'sluice:t:{a}', rules: [rule], cost: 1, operation: 'consume', now: CLOCK_START };

const fail = (): never => {
  throw new Error('ECONNREFUSED');
};

describe('createFailurePolicy', () => {
  test('a successful call is answered with its own value, untouched', () => {
    const store = new MapStore();
    const policy = createFailurePolicy();
    const result = policy.runSync(request, (r) => store.limit(r));
    expect(result).not.toBeInstanceOf(FailureAnswer);
    expect((result as LimitResult).outcomes[0]).toMatchObject({ allowed: true, remaining: 1 });
  });

  test("a failure is a FailureAnswer with STORE_ERROR (cause kept) and the verdict of 'allow' or 'deny'", () => {
    for (const onStoreError of ['allow', 'deny'] as const) {
      const answer = createFailurePolicy({ onStoreError }).runSync(request, fail);
      expect(answer).toBeInstanceOf(FailureAnswer);
      expect(answer).toMatchObject({
        verdict: onStoreError,
        result: undefined,
        error: { code: 'STORE_ERROR', cause: { message: 'ECONNREFUSED' } },
      });
    }
  });

  test('a fallback store answers the same request: its result, with the primary failure', () => {
    const fallback = new MapStore();
    const answer = createFailurePolicy({ onStoreError: fallback }).runSync(request, fail) as FailureAnswer;
    expect(answer.verdict).toBeUndefined();
    expect(answer.result?.outcomes[0]).toMatchObject({ allowed: true, remaining: 1 });
    expect(fallback.calls).toBe(1);
    expect(answer.error).toMatchObject({ code: 'STORE_ERROR' });
  });

  test("a fallback store that fails too gives the verdict 'allow'", () => {
    const broken: Store = { capabilities: new MapStore().capabilities, limit: fail, reset: () => undefined };
    const answer = createFailurePolicy({ onStoreError: broken }).runSync(request, fail) as FailureAnswer;
    expect(answer).toMatchObject({ verdict: 'allow', result: undefined, error: { code: 'STORE_ERROR' } });
  });

  test('the breaker opens after failureThreshold failures: the call is then not made (CIRCUIT_OPEN), until cooldown', () => {
    let now = CLOCK_START;
    let calls = 0;
    const policy = createFailurePolicy({ circuitBreaker: { failureThreshold: 2, cooldown: 1000 }, clock: () => now });
    const call = (): LimitResult => {
      calls++;
      return fail();
    };
    policy.runSync(request, call);
    policy.runSync(request, call);
    expect(policy.circuit).toBe('open');
    expect(policy.runSync(request, call)).toMatchObject({ error: { code: 'CIRCUIT_OPEN' } });
    expect(calls).toBe(2);
    now += 1000;
    const healthy = new MapStore();
    expect(policy.runSync({ ...request, now }, (r) => healthy.limit(r))).not.toBeInstanceOf(FailureAnswer);
    expect(policy.circuit).toBe('closed');
  });

  test('a call that hangs is answered at timeout with STORE_TIMEOUT', async () => {
    const policy = createFailurePolicy({ timeout: 30 });
    const start = Date.now();
    const answer = await policy.run(request, () => new Promise<LimitResult>(() => {}));
    expect(answer).toMatchObject({ verdict: 'allow', error: { code: 'STORE_TIMEOUT' } });
    expect(Date.now() - start).toBeGreaterThanOrEqual(25);
  });

  test('an asynchronous call is answered with its value when it is in time', async () => {
    const store = new AsyncMapStore();
    const answer = await createFailurePolicy({ timeout: 1000 }).run(request, (r) => store.limit(r));
    expect((answer as LimitResult).outcomes[0]).toMatchObject({ allowed: true });
  });

  test('runSync refuses, with UNSUPPORTED_OPERATION, an answer that would need a promise (an asynchronous fallback)', () => {
    const policy = createFailurePolicy({ onStoreError: new AsyncMapStore() as unknown as Store });
    expect(policy.synchronous).toBe(false);
    expect(() => policy.runSync(request, fail)).toThrow(expect.objectContaining({ code: 'UNSUPPORTED_OPERATION' }));
  });

  test('options are validated with the caller named', () => {
    expect(() => createFailurePolicy({ timeout: -1 })).toThrow(/createFailurePolicy: timeout must be a duration from 1 to 2147483647 ms/);
    expect(() => createFailurePolicy({ onStoreError: 'maybe' as never, caller: 'tier' })).toThrow(
      /tier: onStoreError must be 'allow', 'deny' or a store/,
    );
    expect(() => createFailurePolicy({ deadline: 5 } as never)).toThrow(expect.objectContaining({ code: 'UNKNOWN_OPTION' }));
  });
});

describe('capabilities.operations is checked by the limiter', () => {
  test("createLimiter refuses a store that does not list 'limit' and 'reset'", () => {
    const store = new MapStore();
    const partial = {
      capabilities: { ...store.capabilities, operations: ['limit'] },
      limit: (r: LimitRequest) => store.limit(r),
      reset: () => undefined,
    } as unknown as Store;
    expect(() => createLimiter({ store: partial, rules: rule })).toThrow(/store.capabilities.operations must list 'limit' and 'reset'/);
  });

  test('a take or reserve on a store that does not list the operation is refused before the store is called', async () => {
    const store = new MapStore();
    const limiter = createLimiter({ store, rules: rule, clock: () => CLOCK_START });
    expect(() => limiter.takeSync('a')).toThrow(expect.objectContaining({ code: 'UNSUPPORTED_OPERATION' }));
    await expect(limiter.reserve('a', { maxWait: 10 })).rejects.toMatchObject({ code: 'UNSUPPORTED_OPERATION' });
    expect(store.calls).toBe(0);
  });
});
