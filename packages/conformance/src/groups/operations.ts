import { createLimiter, fixedWindow, isSluiceError, tokenBucket, type Decision, type Limiter, type Rule, type Store } from '@sluice/core';
import { describe, expect, it } from 'vitest';
import type { TestContext } from '../context.js';

type OptionalOperation = 'take' | 'reserve';

/** A take or reserve step: the decision must match `expect` and equal the reference model's, field for field. */
interface OperationStep {
  at: number;
  op: 'take' | 'reserve' | 'limit';
  cost?: number;
  maxWait?: number;
  expect: Partial<Pick<Decision, 'allowed' | 'remaining' | 'retryAfter' | 'reason' | 'granted'>> & { wait?: number };
}

interface OperationVector {
  title: string;
  operation: OptionalOperation;
  rules: () => Rule | Rule[];
  steps: OperationStep[];
}

/** Hand-computed vectors; times are ms after the test's start (the fake clock), `wait` is startAt − now. */
export const OPERATION_VECTORS: OperationVector[] = [
  {
    title: 'take: a fixed window of 5 per minute grants what is left, then 0, then a fresh window',
    operation: 'take',
    rules: () => fixedWindow({ id: 'fw', limit: 5, window: '1m' }),
    steps: [
      { at: 0, op: 'take', cost: 3, expect: { allowed: true, granted: 3, remaining: 2 } },
      { at: 0, op: 'take', cost: 5, expect: { allowed: true, granted: 2, remaining: 0 } },
      { at: 0, op: 'take', cost: 1, expect: { allowed: false, granted: 0, remaining: 0, reason: 'rate_limited', retryAfter: 60_000 } },
      { at: 0, op: 'take', cost: 0, expect: { allowed: true, granted: 0, remaining: 0 } },
      { at: 60_000, op: 'take', cost: 10, expect: { allowed: true, granted: 5, remaining: 0 } },
    ],
  },
  {
    title: 'take: a token bucket of 4 (1 per second) grants whole tokens only',
    operation: 'take',
    rules: () => tokenBucket({ id: 'tb', capacity: 4, refillRate: 1, interval: '1s' }),
    steps: [
      { at: 0, op: 'take', cost: 10, expect: { allowed: true, granted: 4, remaining: 0 } },
      { at: 1_500, op: 'take', cost: 10, expect: { allowed: true, granted: 1, remaining: 0 } },
      { at: 1_500, op: 'take', cost: 10, expect: { allowed: false, granted: 0, retryAfter: 500 } },
    ],
  },
  {
    title: 'take: compound rules grant the same number on every rule (the least room)',
    operation: 'take',
    rules: () => [tokenBucket({ id: 'tb', capacity: 5, refillRate: 1, interval: '1s' }), fixedWindow({ id: 'fw', limit: 3, window: '1m' })],
    steps: [
      { at: 0, op: 'take', cost: 10, expect: { allowed: true, granted: 3, remaining: 0 } },
      // The bucket kept 2 tokens: a plain consume of 2 is refused by the window, which took 3 too.
      { at: 0, op: 'limit', cost: 2, expect: { allowed: false, remaining: 0, retryAfter: 60_000 } },
    ],
  },
  {
    title: 'reserve: a token bucket of 2 (1 per second) books 1 s apart and later requests queue behind',
    operation: 'reserve',
    rules: () => tokenBucket({ id: 'tb', capacity: 2, refillRate: 1, interval: '1s' }),
    steps: [
      { at: 0, op: 'reserve', maxWait: 5_000, expect: { allowed: true, wait: 0, remaining: 1 } },
      { at: 0, op: 'reserve', maxWait: 5_000, expect: { allowed: true, wait: 0, remaining: 0 } },
      { at: 0, op: 'reserve', maxWait: 5_000, expect: { allowed: true, wait: 1_000, remaining: 0 } },
      { at: 0, op: 'reserve', maxWait: 5_000, expect: { allowed: true, wait: 2_000, remaining: 0 } },
      { at: 0, op: 'reserve', maxWait: 2_500, expect: { allowed: false, wait: 3_000, retryAfter: 3_000, reason: 'rate_limited' } },
      { at: 0, op: 'limit', expect: { allowed: false, retryAfter: 3_000 } },
      { at: 500, op: 'reserve', maxWait: 2_500, expect: { allowed: true, wait: 2_500 } },
    ],
  },
  {
    title: 'reserve: a fixed window of 2 per minute books into the next window, within maxWait only',
    operation: 'reserve',
    rules: () => fixedWindow({ id: 'fw', limit: 2, window: '1m' }),
    steps: [
      { at: 10_000, op: 'reserve', cost: 2, maxWait: 60_000, expect: { allowed: true, wait: 0, remaining: 0 } },
      { at: 10_000, op: 'reserve', maxWait: 60_000, expect: { allowed: true, wait: 50_000, remaining: 1 } },
      { at: 10_000, op: 'reserve', cost: 2, maxWait: 60_000, expect: { allowed: false, wait: 110_000, retryAfter: 110_000 } },
      // A consume before the booked window starts is counted in that window (as after a clock that stepped back).
      { at: 10_000, op: 'limit', expect: { allowed: true, remaining: 0 } },
      { at: 10_000, op: 'reserve', maxWait: 200_000, expect: { allowed: true, wait: 110_000, remaining: 1 } },
    ],
  },
  {
    title: 'reserve: compound rules book the latest start over the rules, all-or-nothing',
    operation: 'reserve',
    rules: () => [
      tokenBucket({ id: 'tb', capacity: 1, refillRate: 1, interval: '1s' }),
      fixedWindow({ id: 'fw', limit: 2, window: '10s' }),
    ],
    steps: [
      { at: 0, op: 'reserve', maxWait: 60_000, expect: { allowed: true, wait: 0 } },
      { at: 0, op: 'reserve', maxWait: 60_000, expect: { allowed: true, wait: 1_000 } },
      { at: 0, op: 'reserve', maxWait: 60_000, expect: { allowed: true, wait: 10_000 } },
    ],
  },
  {
    title: 'reserve: a cost above capacity is refused at once (startAt -1), cost 0 starts now',
    operation: 'reserve',
    rules: () => tokenBucket({ id: 'tb', capacity: 2, refillRate: 1, interval: '1s' }),
    steps: [
      {
        at: 0,
        op: 'reserve',
        cost: 5,
        maxWait: 60_000,
        expect: { allowed: false, reason: 'cost_exceeds_limit', retryAfter: Number.POSITIVE_INFINITY },
      },
      { at: 0, op: 'reserve', cost: 0, maxWait: 0, expect: { allowed: true, wait: 0, remaining: 2 } },
    ],
  },
];

async function call(limiter: Limiter, step: OperationStep, identity: string): Promise<Decision> {
  const cost = step.cost ?? 1;
  if (step.op === 'take') return limiter.take(identity, { cost });
  if (step.op === 'reserve') return limiter.reserve(identity, { cost, maxWait: step.maxWait ?? 0 });
  return limiter.limit(identity, { cost });
}

/** Title suffix of an operation vector a store does not support: reported as skipped, never passed unchecked. */
export const NEEDS_OPERATION = (operation: OptionalOperation): string => `(skipped: the store does not support ${operation})`;

/**
 * The take and reserve operations. A store that announces an operation runs its vectors (they drive the fake clock, so a
 * store-clock store leaves them out, as it does the other time-driven vectors); a store that does not announce a
 * operation gets its vectors reported as skipped, and must refuse the operation with UNSUPPORTED_OPERATION.
 */
export function operationTests(get: () => TestContext<Store>, operations: ReadonlyArray<OptionalOperation>, clientClock: boolean): void {
  for (const operation of ['take', 'reserve'] as const) {
    const supported = operations.includes(operation);
    if (supported && !clientClock) continue;
    describe(`the ${operation} operation`, () => {
      for (const vector of OPERATION_VECTORS.filter((v) => v.operation === operation)) {
        it.skipIf(!supported)(supported ? vector.title : `${vector.title} ${NEEDS_OPERATION(operation)}`, async () => {
          const context = get();
          let now = context.now;
          const start = now;
          context.setNow(start);
          const limiter = context.rawLimiter({ rules: vector.rules() });
          const model = createLimiter({
            store: context.model,
            rules: vector.rules(),
            prefix: context.prefix,
            clock: () => now,
            circuitBreaker: false,
          });
          for (const [index, step] of vector.steps.entries()) {
            now = start + step.at;
            context.setNow(now);
            const where = `${vector.title}, step ${index + 1}`;
            const decision = await call(limiter, step, 'alice');
            expect(decision, `${where}: the reference model's decision`).toEqual(await call(model, step, 'alice'));
            const { wait, ...fields } = step.expect;
            expect(decision, where).toMatchObject(fields);
            if (wait !== undefined) expect(decision.startAt! - decision.now, `${where}: startAt − now`).toBe(wait);
          }
        });
      }
      if (supported) return;
      it(`a store without ${operation} refuses it with UNSUPPORTED_OPERATION, counting nothing`, async () => {
        const context = get();
        const rules = tokenBucket({ id: 'tb', capacity: 2, refillRate: 1, interval: '1h' });
        const limiter = context.rawLimiter({ rules });
        const refused = operation === 'take' ? limiter.take('alice', { cost: 1 }) : limiter.reserve('alice', { maxWait: 1000 });
        await expect(refused).rejects.toMatchObject({ code: 'UNSUPPORTED_OPERATION' });
        // The store itself refuses too, when called directly.
        let caught: unknown;
        try {
          await context.store.limit({
            key: `${context.prefix}:raw:{alice}`,
            rules: [rules],
            cost: 1,
            operation,
            now: context.now,
            maxWaitMs: 1000,
          });
        } catch (error) {
          caught = error;
        }
        expect(isSluiceError(caught) && caught.code, `store.limit must refuse the ${operation} operation`).toBe('UNSUPPORTED_OPERATION');
        expect(String((caught as Error).message)).toContain(operation);
        expect(await limiter.peek('alice'), 'nothing was counted').toMatchObject({ allowed: true, remaining: 2 });
      });
    });
  }
}
