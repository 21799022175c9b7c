/**
 * Failure policy with store doubles that throw, reject, hang or answer late. The same invariants are proven
 * with real faults (a redis-server killed, paused, restarted) in packages/stores/redis/test/faults.test.ts.
 */
import { afterEach, beforeEach, describe, expect, test, vi } from 'vitest';
import { createLimiter, fixedWindow, isSluiceError, tokenBucket, type Store, type SyncStore } from '../src/index.js';
import { evaluate, type LimitRequest, type LimitResult, type State, type StoreCapabilities } from '../src/store/index.js';

/** A healthy synchronous store (core's `evaluate` over a Map), self-contained so this file depends on src only. */
class MapStore implements SyncStore {
  readonly capabilities = { synchronous: true, clock: 'client', operations: ['limit', 'reset'] } as const;
  private readonly states = new Map<string, { state: State; expiresAt: number }>();

  limit(request: LimitRequest): LimitResult {
    const keys = request.rules.map((rule) => `${request.key}:${rule.id}`);
    const states = keys.map((key) => {
      const record = this.states.get(key);
      return record !== undefined && record.expiresAt > request.now ? record.state : undefined;
    });
    const evaluation = evaluate(request.rules, states, request.now, request.cost, request.operation);
    evaluation.writes?.forEach((write, i) => this.states.set(keys[i]!, { state: write.state, expiresAt: request.now + write.ttlMs }));
    return { now: request.now, outcomes: evaluation.outcomes };
  }

  reset(key: string, ids: readonly string[]): void {
    for (const id of ids) this.states.delete(`${key}:${id}`);
  }
}

/** Core compiles without DOM or Node typings; read the (possibly faked) timer functions off globalThis at call time. */
const timers = globalThis as unknown as { setTimeout(callback: () => void, ms: number): unknown };

const ASYNC: StoreCapabilities = { synchronous: false, clock: 'client', operations: ['limit', 'reset'] };

/** A remote store double whose behaviour the test switches at will; counts the calls it receives. */
class FaultyStore implements Store {
  readonly capabilities = ASYNC;
  readonly healthy = new MapStore();
  behaviour: 'ok' | 'hang' | 'reject' | 'throw' | 'late-reject' | 'late-resolve' | 'manual' = 'ok';
  calls = 0;
  /** 'manual': answers the test releases, as a socket read would. */
  readonly held: Array<() => void> = [];

  limit(request: LimitRequest): Promise<LimitResult> {
    this.calls++;
    switch (this.behaviour) {
      case 'ok':
        return Promise.resolve(this.healthy.limit(request));
      case 'hang':
        return new Promise(() => {});
      case 'reject':
        return Promise.reject(new Error('ECONNREFUSED 127.0.0.1:6390'));
      case 'throw':
        throw new Error('client is closed');
      case 'late-reject':
        return new Promise((_, reject) => timers.setTimeout(() => reject(new Error('Connection is closed.')), 500));
      case 'late-resolve':
        return new Promise((resolve) => timers.setTimeout(() => resolve(this.healthy.limit(request)), 500));
      case 'manual':
        return new Promise((resolve) => this.held.push(() => resolve(this.healthy.limit(request))));
    }
  }

  reset(key: string, ids: readonly string[]): Promise<void> {
    if (this.behaviour === 'hang') return new Promise(() => {});
    this.healthy.reset(key, ids);
    return Promise.resolve();
  }
}

const rules = [tokenBucket({ capacity: 3, refillRate: 1 }), fixedWindow({ limit: 10, window: '1m' })];
let unhandled: unknown[] = [];
const onUnhandled = (reason: unknown) => unhandled.push(reason);
const processLike = (
  globalThis as unknown as { process: { on(e: string, f: (r: unknown) => void): void; off(e: string, f: (r: unknown) => void): void } }
).process;

beforeEach(() => {
  unhandled = [];
  processLike.on('unhandledRejection', onUnhandled);
  vi.useFakeTimers();
});

afterEach(async () => {
  await vi.runAllTimersAsync();
  vi.useRealTimers();
  await new Promise<void>((r) => timers.setTimeout(r, 0));
  processLike.off('unhandledRejection', onUnhandled);
  expect(unhandled).toEqual([]);
});

/** Runs a decision under fake timers and reports how much (fake) time it took. */
async function timed<T>(work: () => Promise<T>): Promise<{ value: T; elapsedMs: number }> {
  const start = Date.now();
  const pending = work();
  let value: T | undefined;
  let done = false;
  void pending.then((v) => {
    value = v;
    done = true;
  });
  for (let waited = 0; !done; waited++) {
    if (waited > 60_000) throw new Error('the decision never came: no deadline held it');
    await vi.advanceTimersByTimeAsync(1);
  }
  return { value: value as T, elapsedMs: Date.now() - start };
}

describe('deadline', () => {
  test('a hung store is answered by the policy at timeout, degraded, STORE_TIMEOUT; no timer is left', async () => {
    const store = new FaultyStore();
    store.behaviour = 'hang';
    const limiter = createLimiter({ store, rules, timeout: 100, circuitBreaker: false });
    const { value, elapsedMs } = await timed(() => limiter.limit('u'));
    expect(elapsedMs).toBe(101); // the deadline, plus one turn of the event loop for a reply already read from the socket;
    expect(value).toMatchObject({ allowed: true, reason: 'store_unavailable', degraded: true, rule: 'tb' });
    expect(isSluiceError(value.error) && value.error.code).toBe('STORE_TIMEOUT');
    expect(value.rules.map((r) => [r.id, r.allowed, r.remaining])).toEqual([
      ['tb', true, 3],
      ['fw:60000', true, 10],
    ]);
    expect(vi.getTimerCount()).toBe(0);
  });

  test('deny policy fails closed with a retry hint, still degraded', async () => {
    const store = new FaultyStore();
    store.behaviour = 'hang';
    const limiter = createLimiter({ store, rules, timeout: '50ms', onStoreError: 'deny', circuitBreaker: false });
    const { value } = await timed(() => limiter.limit('u'));
    expect(value).toMatchObject({ allowed: false, reason: 'store_unavailable', degraded: true, remaining: 0, retryAfter: 1000 });
  });

  test('healthy answers share one deadline timer, which stops by itself once nothing is in flight', async () => {
    const limiter = createLimiter({ store: new FaultyStore(), rules, timeout: 10_000 });
    for (let i = 0; i < 50; i++) {
      expect(await limiter.limit(`u${i}`)).toMatchObject({ allowed: true, degraded: false, reason: 'ok', remaining: 2 });
    }
    expect(vi.getTimerCount()).toBe(1);
    await vi.advanceTimersByTimeAsync(10_000);
    expect(vi.getTimerCount()).toBe(0);
  });

  test('a store that rejects after the deadline causes no unhandled rejection', async () => {
    const store = new FaultyStore();
    store.behaviour = 'late-reject';
    const limiter = createLimiter({ store, rules, timeout: 100, circuitBreaker: false });
    const { value, elapsedMs } = await timed(() => limiter.limit('u'));
    expect(elapsedMs).toBe(101);
    expect(value.degraded).toBe(true);
    await vi.advanceTimersByTimeAsync(1000); // the late rejection fires now; afterEach asserts it was handled
  });

  test('a late success after the deadline does not change the decision already given', async () => {
    const store = new FaultyStore();
    store.behaviour = 'late-resolve';
    const limiter = createLimiter({ store, rules, timeout: 100, onStoreError: 'deny', circuitBreaker: false });
    const { value } = await timed(() => limiter.limit('u'));
    expect(value).toMatchObject({ allowed: false, degraded: true });
  });

  test('calls started at different times each get their own deadline from one shared timer', async () => {
    const store = new FaultyStore();
    store.behaviour = 'hang';
    const limiter = createLimiter({ store, rules, timeout: 100, circuitBreaker: false });
    const settledAt: number[] = [];
    const start = Date.now();
    const calls: Array<Promise<unknown>> = [];
    for (let i = 0; i < 3; i++) {
      calls.push(limiter.limit(`u${i}`).then((d) => settledAt.push(Date.now() - start) && d));
      expect(vi.getTimerCount()).toBe(1);
      await vi.advanceTimersByTimeAsync(40);
    }
    await vi.advanceTimersByTimeAsync(101);
    await Promise.all(calls);
    expect(settledAt).toEqual([101, 141, 181]);
    expect(vi.getTimerCount()).toBe(0); // the last deadline fired and nothing was left in flight
  });

  test('answers and hangs interleaved: answers come at once, hangs at their deadline, no timer left', async () => {
    const store = new FaultyStore();
    let n = 0;
    const switching: Store = {
      capabilities: ASYNC,
      limit: (request) => {
        store.behaviour = n++ % 2 === 0 ? 'ok' : 'hang';
        return store.limit(request);
      },
      reset: () => Promise.resolve(),
    };
    const limiter = createLimiter({ store: switching, rules, timeout: 100, circuitBreaker: false });
    const decisions = await (async () => {
      const pending = Array.from({ length: 10 }, (_, i) => limiter.limit(`u${i}`));
      await vi.advanceTimersByTimeAsync(0);
      expect(vi.getTimerCount()).toBe(1);
      await vi.advanceTimersByTimeAsync(101);
      return Promise.all(pending);
    })();
    expect(decisions.map((d) => d.degraded)).toEqual([false, true, false, true, false, true, false, true, false, true]);
    expect(decisions.filter((d) => d.degraded).every((d) => isSluiceError(d.error) && d.error.code === 'STORE_TIMEOUT')).toBe(true);
    expect(vi.getTimerCount()).toBe(0); // the shared timer fired for the hung calls; nothing is left in flight
  });

  test('timeout is validated when the limiter is built', () => {
    const store = new FaultyStore();
    expect(() => createLimiter({ store, rules, timeout: 0 })).toThrow(
      /createLimiter: timeout must be a duration from 1 to 2147483647 ms \(a whole number of ms or a string like '250ms', '1s', '5m', '1h', '1d'\), got 0$/,
    );
    expect(() => createLimiter({ store, rules, timeout: 2 ** 31 })).toThrow(
      /createLimiter: timeout must be a duration from 1 to 2147483647 ms/,
    );
    expect(() => createLimiter({ store, rules, onStoreError: 'maybe' as never })).toThrow(
      /onStoreError must be 'allow', 'deny' or a store/,
    );
  });
});

describe('the deadline measures the store, not the application', () => {
  /** A synchronous stall of the process: the wall clock moves, no timer runs. */
  const stall = (ms: number) => vi.setSystemTime(Date.now() + ms);

  test('regression: a reply that arrived while the loop was stalled is used, not timed out, and the breaker stays closed', async () => {
    const store = new FaultyStore();
    store.behaviour = 'manual';
    const limiter = createLimiter({ store, rules, timeout: 100, circuitBreaker: { failureThreshold: 1, cooldown: 2000 } });
    const decisions = Array.from({ length: 20 }, (_, i) => limiter.limit(`u${i}`));
    await vi.advanceTimersByTimeAsync(10);
    stall(400); // a 400 ms synchronous handler
    await vi.advanceTimersByTimeAsync(1); // timers run first after the stall: the deadline fires, late
    for (const answer of store.held) answer(); // then the poll phase reads the replies waiting on the socket
    await vi.advanceTimersByTimeAsync(1);
    const answered = await Promise.all(decisions);
    expect(answered.filter((d) => d.degraded)).toEqual([]);
    expect(limiter.circuit).toBe('closed');
  });

  test('a stall moves the deadline of every call in flight by its length', async () => {
    const store = new FaultyStore();
    store.behaviour = 'manual';
    const limiter = createLimiter({ store, rules, timeout: 100, circuitBreaker: false });
    const start = Date.now();
    const first = limiter.limit('a');
    await vi.advanceTimersByTimeAsync(90);
    const second = limiter.limit('b'); // due at start + 190
    stall(300); // the loop is stuck from start + 90 to start + 390
    await vi.advanceTimersByTimeAsync(1); // fires 291 ms late: first is due now, second moves to start + 481
    expect(Date.now() - start).toBe(391);
    store.held[1]!(); // second's reply comes 80 ms after the stall: inside its moved deadline
    await vi.advanceTimersByTimeAsync(80);
    expect(await second).toMatchObject({ degraded: false });
    expect(await first).toMatchObject({ degraded: true, error: { code: 'STORE_TIMEOUT' } }); // never answered
  });

  test('a store that does not answer is still refused: a stall buys no extra time beyond its own length', async () => {
    const store = new FaultyStore();
    store.behaviour = 'hang';
    const limiter = createLimiter({ store, rules, timeout: 100, circuitBreaker: false });
    const start = Date.now();
    const pending = limiter.limit('u');
    stall(1000);
    const { value, elapsedMs } = await timed(() => pending);
    expect(value).toMatchObject({ degraded: true, error: { code: 'STORE_TIMEOUT' } });
    expect(Date.now() - start).toBeLessThanOrEqual(1000 + 102);
    expect(elapsedMs).toBeLessThanOrEqual(102);
  });
});

describe('errors', () => {
  for (const behaviour of ['reject', 'throw'] as const) {
    test(`a store that ${behaviour}s gives STORE_ERROR with the cause kept`, async () => {
      const store = new FaultyStore();
      store.behaviour = behaviour;
      const limiter = createLimiter({ store, rules, circuitBreaker: false });
      const decision = await limiter.limit('u');
      expect(decision).toMatchObject({ allowed: true, reason: 'store_unavailable', degraded: true });
      expect(isSluiceError(decision.error) && decision.error.code).toBe('STORE_ERROR');
      expect((decision.error as Error).cause).toBeInstanceOf(Error);
      await vi.advanceTimersByTimeAsync(250);
      expect(vi.getTimerCount()).toBe(0);
    });
  }

  test('reset on a hung store rejects with STORE_TIMEOUT instead of hanging', async () => {
    const store = new FaultyStore();
    store.behaviour = 'hang';
    const limiter = createLimiter({ store, rules, timeout: 100 });
    const outcome = limiter.reset('u').then(
      () => 'resolved',
      (error: unknown) => (isSluiceError(error) ? error.code : 'other'),
    );
    await vi.advanceTimersByTimeAsync(101); // the deadline, plus one loop turn for a reply already read
    expect(await outcome).toBe('STORE_TIMEOUT');
  });
});

describe('fallback store', () => {
  test('a fallback store keeps limiting during the outage, each answer marked degraded', async () => {
    const store = new FaultyStore();
    store.behaviour = 'reject';
    let now = 1_700_000_000_000;
    const limiter = createLimiter({ store, rules, onStoreError: new MapStore(), circuitBreaker: false, clock: () => now });
    const decisions = [];
    for (let i = 0; i < 5; i++) decisions.push(await limiter.limit('u'));
    expect(decisions.map((d) => d.allowed)).toEqual([true, true, true, false, false]);
    expect(decisions.every((d) => d.degraded && isSluiceError(d.error) && d.error.code === 'STORE_ERROR')).toBe(true);
    expect(decisions[3]!.reason).toBe('rate_limited');
    store.behaviour = 'ok';
    now += 10_000;
    expect(await limiter.limit('u')).toMatchObject({ degraded: false, allowed: true });
  });

  test('an asynchronous fallback store is held to the same deadline, then fails open', async () => {
    const store = new FaultyStore();
    store.behaviour = 'hang';
    const fallback = new FaultyStore();
    fallback.behaviour = 'hang';
    const limiter = createLimiter({ store, rules, timeout: 100, onStoreError: fallback, circuitBreaker: false });
    const { value, elapsedMs } = await timed(() => limiter.limit('u'));
    expect(elapsedMs).toBe(202); // the store's deadline then the fallback's, each with one loop turn of grace;
    expect(value).toMatchObject({ allowed: true, reason: 'store_unavailable', degraded: true });
    expect(vi.getTimerCount()).toBe(0);
  });
});

describe('circuit breaker', () => {
  test('opens after failureThreshold failures, stops calling the store, probes after cooldown, closes on success', async () => {
    const store = new FaultyStore();
    store.behaviour = 'reject';
    let now = 1_700_000_000_000;
    const limiter = createLimiter({ store, rules, clock: () => now, circuitBreaker: { failureThreshold: 3, cooldown: 1000 } });
    for (let i = 0; i < 3; i++) expect((await limiter.limit('u')).error).toMatchObject({ code: 'STORE_ERROR' });
    expect(limiter.circuit).toBe('open');
    for (let i = 0; i < 10; i++) expect((await limiter.limit('u')).error).toMatchObject({ code: 'CIRCUIT_OPEN' });
    expect(store.calls).toBe(3);

    now += 1000; // cooldown over: one probe, which fails and re-opens
    expect((await limiter.limit('u')).error).toMatchObject({ code: 'STORE_ERROR' });
    expect(store.calls).toBe(4);
    expect(limiter.circuit).toBe('open');

    store.behaviour = 'ok';
    expect((await limiter.limit('u')).error).toMatchObject({ code: 'CIRCUIT_OPEN' });
    now += 1000;
    expect(await limiter.limit('u')).toMatchObject({ degraded: false, reason: 'ok' });
    expect(limiter.circuit).toBe('closed');
    expect(store.calls).toBe(5);
  });

  test('while a probe is in flight, other requests are answered by the policy at once', async () => {
    const store = new FaultyStore();
    store.behaviour = 'hang';
    let now = 0;
    const limiter = createLimiter({ store, rules, clock: () => now, timeout: 100, circuitBreaker: { failureThreshold: 1, cooldown: 500 } });
    await timed(() => limiter.limit('u'));
    now = 500;
    const probe = limiter.limit('u');
    expect(limiter.circuit).toBe('half-open');
    const other = await limiter.limit('u');
    expect(other.error).toMatchObject({ code: 'CIRCUIT_OPEN' });
    expect(store.calls).toBe(2);
    await vi.advanceTimersByTimeAsync(101);
    expect((await probe).error).toMatchObject({ code: 'STORE_TIMEOUT' });
    expect(limiter.circuit).toBe('open');
  });

  test('synchronous stores go through the breaker too', () => {
    const inner = new MapStore();
    let failing = true;
    let calls = 0;
    const store = {
      capabilities: inner.capabilities,
      limit(request: LimitRequest) {
        calls++;
        if (failing) throw new Error('SQLITE_BUSY: database is locked');
        return inner.limit(request);
      },
      reset: (key: string, ids: readonly string[]) => inner.reset(key, ids),
    };
    let now = 0;
    const limiter = createLimiter({ store, rules, clock: () => now, circuitBreaker: { failureThreshold: 2, cooldown: 100 } });
    expect(limiter.limitSync('u').error).toMatchObject({ code: 'STORE_ERROR' });
    expect(limiter.limitSync('u').error).toMatchObject({ code: 'STORE_ERROR' });
    expect(limiter.limitSync('u').error).toMatchObject({ code: 'CIRCUIT_OPEN' });
    expect(calls).toBe(2);
    failing = false;
    now = 100;
    expect(limiter.limitSync('u')).toMatchObject({ degraded: false, allowed: true });
    expect(limiter.circuit).toBe('closed');
  });
});
