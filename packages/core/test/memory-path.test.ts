/**
 * The limiter's seam for a MemoryFirstStore (store/store.ts): single-rule step-operation requests go to the store's bound
 * `limitOne`, which answers from memory into a reused object or falls back to a result or a promise, as `limit`
 * would. Over generated histories (backward clock steps, huge gaps, cost 0, oversize costs, a store clock ahead of
 * the limiter's), a limiter with the seam decides exactly as one over the same store without it, in every mode and
 * through the shortcut for `limit` without options; requests the seam does not serve, and limiters whose failure
 * policy asks a fallback store, go to `limit`.
 */
import fc from 'fast-check';
import { describe, expect, test } from 'vitest';
import { createLimiter, fixedWindow, tokenBucket, type Decision, type Limiter } from '../src/index.js';
import {
  evaluate,
  identityKey,
  type LimitRequest,
  type LimitResult,
  type MemoryAnswer,
  type MemoryFirstStore,
  type MemoryPath,
  type State,
  type Store,
  type StoreCapabilities,
} from '../src/store/index.js';
import { CLOCK_START, costArb, moveArb, operationArb } from './support/scenario.js';

/**
 * An asynchronous store over a Map, deciding on its own clock (the caller's plus `skewMs`), with the seam: through
 * `limitOne`, the identities that start with `m-` are answered from memory into `out`, the others with a promise.
 */
class MemoryFirstDouble implements MemoryFirstStore {
  readonly capabilities: StoreCapabilities = {
    synchronous: false,
    clock: 'store',
    operations: ['limit', 'reset', 'take', 'reserve'],
    memoryFirst: true,
  };
  readonly states = new Map<string, { state: State; expiresAt: number }>();
  readonly calls: string[] = [];
  fromMemory = 0;

  constructor(private readonly skewMs: number) {}

  limit(request: LimitRequest): Promise<LimitResult> {
    this.calls.push(`limit:${request.operation}`);
    return Promise.resolve(this.run(request));
  }

  bindMemoryPath(keyPrefix: string): MemoryPath {
    return {
      limitOne: (request, out: MemoryAnswer) => {
        this.calls.push(`limitOne:${request.operation}`);
        if (request.key !== `${keyPrefix}${identityKey(request.identity)}}`)
          throw new Error(`request.key ${request.key} is not the identity's key`);
        const result = this.run(request);
        if (!request.identity.startsWith('m-')) return Promise.resolve(result);
        this.fromMemory++;
        const outcome = result.outcomes[0]!;
        out.allowed = outcome.allowed;
        out.remaining = outcome.remaining;
        out.resetAt = outcome.resetAt;
        out.retryAt = outcome.retryAt;
        out.now = result.now;
        return undefined;
      },
    };
  }

  reset(key: string, ruleIds: readonly string[]): void {
    for (const id of ruleIds) this.states.delete(`${key}:${id}`);
  }

  private run(request: LimitRequest): LimitResult {
    const now = Math.max(0, request.now + this.skewMs);
    const keys = request.rules.map((rule) => `${request.key}:${rule.id}`);
    const states = keys.map((key) => {
      const record = this.states.get(key);
      return record !== undefined && record.expiresAt > now ? record.state : undefined;
    });
    const evaluation = evaluate(request.rules, states, now, request.cost, request.operation, request.maxWaitMs);
    evaluation.writes?.forEach((write, i) => {
      if (write.ttlMs > 0) this.states.set(keys[i]!, { state: [...write.state], expiresAt: now + write.ttlMs });
      else this.states.delete(keys[i]!);
    });
    return { now, outcomes: evaluation.outcomes };
  }
}

function memoryFirstDouble(skewMs: number): MemoryFirstDouble {
  return new MemoryFirstDouble(skewMs);
}

/** The same store seen without the seam: the limiter then takes `limit(request)`. */
function withoutSeam(store: Store): Store {
  return { capabilities: store.capabilities, limit: (request) => store.limit(request), reset: (key, ids) => store.reset(key, ids) };
}

const eventArb = fc.record({
  move: moveArb(1000),
  cost: costArb(4),
  operation: operationArb(true),
  identity: fc.constantFrom('m-1', 'm-2', 'remote'),
  mode: fc.constantFrom('enforce', 'enforce', 'enforce', 'shadow', 'off'),
});

describe('a limiter over a MemoryFirstStore', () => {
  for (const [name, rule] of [
    ['fixed window', () => fixedWindow({ limit: 4, window: '1s' })],
    ['token bucket', () => tokenBucket({ capacity: 4, refillRate: 2, interval: '1s' })],
  ] as const) {
    test(`${name}: decides exactly as over the same store without the seam`, async () => {
      await fc.assert(
        fc.asyncProperty(fc.array(eventArb, { minLength: 1, maxLength: 40 }), fc.constantFrom(0, 250), async (events, skewMs) => {
          let now = CLOCK_START;
          const clock = () => now;
          const seamStore = memoryFirstDouble(skewMs);
          const generalStore = memoryFirstDouble(skewMs);
          const fast = createLimiter({ store: seamStore, rules: rule(), clock });
          const general = createLimiter({ store: withoutSeam(generalStore), rules: rule(), clock });
          for (const event of events) {
            now = Math.max(0, now + event.move);
            for (const limiter of [fast, general]) limiter.configure({ mode: event.mode as 'enforce' });
            const call = (limiter: Limiter): Promise<Decision> =>
              event.operation === 'consume'
                ? event.cost === 1
                  ? limiter.limit(event.identity)
                  : limiter.limit(event.identity, { cost: event.cost })
                : event.operation === 'peek'
                  ? limiter.peek(event.identity, { cost: event.cost })
                  : limiter.refund(event.identity, { cost: event.cost });
            expect(await call(fast)).toStrictEqual(await call(general));
            expect([...seamStore.states]).toEqual([...generalStore.states]);
          }
        }),
        { numRuns: 150 },
      );
    });
  }

  test('single-rule step operations go through the bound path, whose answers from memory come back as decisions; the rest through limit', async () => {
    const store = memoryFirstDouble(0);
    const limiter = createLimiter({ store, rules: fixedWindow({ limit: 4, window: '1s' }), clock: () => CLOCK_START });
    const decision = await limiter.limit('m-1');
    expect(decision).toMatchObject({ allowed: true, remaining: 3, degraded: false, now: CLOCK_START });
    await limiter.peek('m-1');
    await limiter.limit('remote');
    await limiter.take('m-1', { cost: 2 });
    limiter.configure({ rules: [fixedWindow({ limit: 4, window: '1s' }), fixedWindow({ limit: 9, window: '1m', id: 'minute' })] });
    await limiter.limit('m-1');
    expect(store.calls).toEqual(['limitOne:consume', 'limitOne:peek', 'limitOne:consume', 'limit:take', 'limit:consume']);
    expect(store.fromMemory).toBe(2);
    // An asynchronous store has no synchronous methods, seam or not.
    expect(() => (limiter as unknown as { limitSync: (id: string) => Decision }).limitSync('m-1')).toThrow();
  });

  test('no seam when the failure policy asks a fallback store: it gets the request, and may copy it', async () => {
    const store = memoryFirstDouble(0);
    const fallback = memoryFirstDouble(0);
    const limiter = createLimiter({
      store,
      rules: fixedWindow({ limit: 4, window: '1s' }),
      clock: () => CLOCK_START,
      onStoreError: fallback,
    });
    await limiter.limit('m-1');
    expect(store.calls).toEqual(['limit:consume']);
  });
});
