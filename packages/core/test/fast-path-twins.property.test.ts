/**
 * A fast path is kept only where `pnpm bench memory` shows it pays, and each one kept is proven equal to
 * the general path here, from histories with backward clock steps, huge gaps, cost 0 and oversize costs:
 * - `stepRuleInto` equals `stepRule`, with one scratch reused across calls as the memory store (and `sluice tune`)
 *   reuses it, and starting dirty; through it each `*Into` step (fixed window, sliding window counter, token
 *   bucket, GCRA) equals its allocating `*Step`. Each `*Step` is its `*Into` with a fresh scratch, so what checks
 *   the arithmetic itself is the reference models (algorithms.property.test.ts, through a limiter on the memory
 *   store, which runs `stepRuleInto`); this checks that a reused scratch carries nothing over (a stale `next`
 *   length, a field left unset);
 * - `combineOneOutcome` (the limiter's single-rule seam over a FastPathStore) equals `combineOutcomes` field for field;
 * - a limiter over a FastPathStore (its single-rule requests answered by its bound `FastPath`) gives the same decisions,
 *   and leaves the same states, as one over the same store without the seam, also through the limiter's shortcut
 *   for `limit`/`limitSync` without options (in every mode, across configure(), with bad identities).
 */
import fc from 'fast-check';
import { describe, expect, test } from 'vitest';
import { combineOneOutcome, combineOutcomes } from '../src/limiter/decision.js';
import { createLimiter, fixedWindow, tokenBucket, type Decision, type SyncStore } from '../src/index.js';
import {
  evaluate,
  identityKey,
  newStepScratch,
  stepRule,
  stepRuleInto,
  type FastPath,
  type FastPathStore,
  type FastRequest,
  type LimitRequest,
  type LimitResult,
  type RuleAnswer,
  type RuleOutcome,
  type State,
} from '../src/store/index.js';
import { PLAIN, forEachCase, type AlgorithmCase } from './support/cases.js';
import { RUNS, CLOCK_START, costArb, moveArb, operationArb } from './support/scenario.js';

function historyArb<P>(c: AlgorithmCase<P>) {
  return c.params.chain((params) =>
    fc.record(
      {
        params: fc.constant(params),
        events: fc.array(
          fc.record({ move: moveArb(c.scaleMs(params)), cost: costArb(c.capacity(params)), operation: operationArb(true) }, PLAIN),
          {
            minLength: 1,
            maxLength: 40,
          },
        ),
      },
      PLAIN,
    ),
  );
}

/** A synchronous, client-clock store over a Map; `limitOne` is the seam, written with `stepRuleInto` as memory's is. */
class SeamStore implements FastPathStore {
  readonly capabilities = { synchronous: true, clock: 'client', operations: ['limit', 'reset'] } as const;
  readonly states = new Map<string, { state: State; expiresAt: number }>();
  private readonly scratch = newStepScratch();

  limit(request: LimitRequest): LimitResult {
    const keys = request.rules.map((rule) => `${request.key}:${rule.id}`);
    const states = keys.map((key) => this.read(key, request.now));
    const evaluation = evaluate(request.rules, states, request.now, request.cost, request.operation);
    evaluation.writes?.forEach((write, i) => this.write(keys[i]!, write.state, write.ttlMs, request.now));
    return { now: request.now, outcomes: evaluation.outcomes };
  }

  bindFastPath(keyPrefix: string): FastPath {
    return { limitOne: (request, out) => this.limitOne(keyPrefix, request, out) };
  }

  /** Finds the state by prefix and identity, as a store with an identity index would; the request's key must agree. */
  limitOne(keyPrefix: string, request: FastRequest, out: RuleAnswer): void {
    const key = `${keyPrefix}${identityKey(request.identity)}}:${request.rules[0]!.id}`;
    if (`${request.key}:${request.rules[0]!.id}` !== key) throw new Error(`request.key ${request.key} is not the identity's key`);
    const step = this.scratch;
    stepRuleInto(request.rules[0]!, this.read(key, request.now), request.now, request.cost, request.operation, step);
    if (request.cost > 0 && (request.operation === 'refund' || (request.operation === 'consume' && step.allowed))) {
      this.write(key, step.next.slice(), step.ttlMs, request.now);
    }
    out.allowed = step.allowed;
    out.remaining = step.remaining;
    out.resetAt = step.resetAt;
    out.retryAt = step.retryAt;
  }

  reset(key: string, ruleIds: readonly string[]): void {
    for (const id of ruleIds) this.states.delete(`${key}:${id}`);
  }

  private read(key: string, now: number): State | undefined {
    const record = this.states.get(key);
    return record !== undefined && record.expiresAt > now ? record.state : undefined;
  }

  private write(key: string, state: State, ttlMs: number, now: number): void {
    if (ttlMs > 0) this.states.set(key, { state: [...state], expiresAt: now + ttlMs });
    else this.states.delete(key);
  }
}

/** The same store seen without the seam: the limiter then takes `limit(request)`. */
function withoutSeam(store: SeamStore): SyncStore {
  return { capabilities: store.capabilities, limit: (request) => store.limit(request), reset: (key, ids) => store.reset(key, ids) };
}

function twinProperties<P>(c: AlgorithmCase<P>): void {
  describe(c.name, () => {
    test('stepRuleInto, with one scratch reused, equals stepRule at every step of a history', () => {
      fc.assert(
        fc.property(historyArb(c), ({ params, events }) => {
          const rule = c.rule(params);
          const scratch = newStepScratch();
          // Dirty, as after another rule's step: every field and the length of `next` must be overwritten.
          Object.assign(scratch, { allowed: false, next: [7, 7, 7, 7, 7], remaining: -7, resetAt: -7, retryAt: -7, ttlMs: -7 });
          let now = CLOCK_START;
          let state: State | undefined;
          for (const event of events) {
            now = Math.max(0, now + event.move);
            const general = stepRule(rule, state, now, event.cost, event.operation);
            stepRuleInto(rule, state, now, event.cost, event.operation, scratch);
            expect({ ...scratch, next: [...scratch.next] }).toEqual({ ...general, next: [...general.next] });
            if (event.cost > 0 && (event.operation === 'refund' || (event.operation === 'consume' && general.allowed)))
              state = general.next;
          }
        }),
        RUNS,
      );
    });

    test('combineOneOutcome equals combineOutcomes on the same outcome', () => {
      fc.assert(
        fc.property(historyArb(c), ({ params, events }) => {
          const rule = c.rule(params);
          let now = CLOCK_START;
          let state: State | undefined;
          for (const event of events) {
            now = Math.max(0, now + event.move);
            const step = stepRule(rule, state, now, event.cost, event.operation);
            const outcome: RuleOutcome = {
              id: rule.id,
              allowed: step.allowed,
              limit: rule.limit,
              remaining: step.remaining,
              resetAt: step.resetAt,
              retryAt: step.retryAt,
            };
            const answer: RuleAnswer = { allowed: step.allowed, remaining: step.remaining, resetAt: step.resetAt, retryAt: step.retryAt };
            expect(combineOneOutcome(rule, answer, now)).toStrictEqual(combineOutcomes([rule], [outcome], now));
            if (event.cost > 0 && (event.operation === 'refund' || (event.operation === 'consume' && step.allowed))) state = step.next;
          }
        }),
        RUNS,
      );
    });

    test('a limiter over a FastPathStore decides, and writes, exactly as over the same store without the seam', () => {
      fc.assert(
        fc.property(historyArb(c), ({ params, events }) => {
          let now = CLOCK_START;
          const fastStore = new SeamStore();
          const generalStore = new SeamStore();
          const clock = () => now;
          const fast = createLimiter({ store: fastStore, rules: c.rule(params), clock });
          const general = createLimiter({ store: withoutSeam(generalStore), rules: c.rule(params), clock });
          const identity = c.identity(params);
          for (const [i, event] of events.entries()) {
            now = Math.max(0, now + event.move);
            // A cost of 1 is asked without options every other time: the call the limiter's `one` shortcut answers.
            const call = (limiter: typeof fast): Decision =>
              event.operation === 'consume'
                ? event.cost === 1 && i % 2 === 0
                  ? limiter.limitSync(identity)
                  : limiter.limitSync(identity, { cost: event.cost })
                : event.operation === 'peek'
                  ? limiter.peekSync(identity, { cost: event.cost })
                  : limiter.refundSync(identity, { cost: event.cost });
            expect(call(fast)).toStrictEqual(call(general));
            expect([...fastStore.states]).toEqual([...generalStore.states]);
          }
        }),
        RUNS,
      );
    });
  });
}

forEachCase(twinProperties);

describe("the limiter's shortcut for limit/limitSync without options", () => {
  test('answers as the general path in enforce, shadow and off modes, across configure() and for bad identities', async () => {
    let now = CLOCK_START;
    const clock = () => now;
    const rule = tokenBucket({ capacity: 2, refillRate: 1 });
    const fastStore = new SeamStore();
    const fast = createLimiter({ store: fastStore, rules: rule, clock });
    const general = createLimiter({ store: withoutSeam(new SeamStore()), rules: rule, clock });
    const both = async (): Promise<void> => {
      expect(fast.limitSync('k')).toStrictEqual(general.limitSync('k'));
      expect(await fast.limit('k')).toStrictEqual(await general.limit('k'));
    };
    for (const mode of ['enforce', 'shadow', 'off', 'enforce'] as const) {
      fast.configure({ mode });
      general.configure({ mode });
      for (let i = 0; i < 3; i++) await both();
      now += 700;
    }
    const two = [rule, tokenBucket({ capacity: 5, refillRate: 1, interval: '1m', id: 'slow' })];
    fast.configure({ rules: two });
    general.configure({ rules: two });
    for (let i = 0; i < 4; i++) await both();
    expect(fast.limitSync('k').rules).toHaveLength(2);
    fast.configure({ rules: rule });
    general.configure({ rules: rule });
    await both();
    expect(fastStore.states.size).toBeGreaterThan(0);
    for (const bad of ['', 7, undefined]) {
      expect(() => fast.limitSync(bad as string)).toThrow(expect.objectContaining({ code: 'INVALID_IDENTITY' }));
      await expect(fast.limit(bad as string)).rejects.toMatchObject({ code: 'INVALID_IDENTITY' });
    }
  });

  test('a store that throws on the fast path is answered by the failure policy, once, without a second attempt', () => {
    let calls = 0;
    const failing: FastPathStore = {
      capabilities: { synchronous: true, clock: 'client', operations: ['limit', 'reset'] },
      limit: () => {
        calls++;
        throw new Error('limit failed');
      },
      bindFastPath: () => ({
        limitOne: () => {
          calls++;
          throw new Error('limitOne failed');
        },
      }),
      reset: () => undefined,
    };
    const denying = createLimiter({
      store: failing,
      rules: tokenBucket({ capacity: 2, refillRate: 1 }),
      onStoreError: 'deny',
      clock: () => CLOCK_START,
    });
    const decision = denying.limitSync('k');
    expect(decision).toMatchObject({ allowed: false, degraded: true, reason: 'store_unavailable' });
    expect((decision.error as { code: string }).code).toBe('STORE_ERROR');
    expect(calls).toBe(1);
  });
});

describe('the seam is taken', () => {
  test('a FastPathStore answers single-rule step-operation requests through its FastPath, everything else through limit', () => {
    const store = new SeamStore();
    const calls: string[] = [];
    const spy: FastPathStore = {
      capabilities: store.capabilities,
      limit: (request) => (calls.push(`limit:${request.operation}`), store.limit(request)),
      bindFastPath: (keyPrefix) => {
        calls.push(`bind:${keyPrefix}`);
        return {
          limitOne: (request, out) => (
            calls.push(`limitOne:${request.operation}:${request.identity}`),
            store.limitOne(keyPrefix, request, out)
          ),
        };
      },
      reset: (key, ids) => store.reset(key, ids),
    };
    const now = CLOCK_START;
    const one = createLimiter({ store: spy, rules: tokenBucket({ capacity: 3, refillRate: 1 }), clock: () => now });
    one.limitSync('a');
    one.peekSync('a');
    one.limitSync('a', { cost: 0 });
    const two = createLimiter({
      store: spy,
      rules: [tokenBucket({ capacity: 3, refillRate: 1 }), tokenBucket({ capacity: 9, refillRate: 1, id: 'day' })],
      clock: () => now,
      name: 'two',
    });
    two.limitSync('a');
    const staggered = createLimiter({
      store: spy,
      rules: fixedWindow({ limit: 3, window: '1s', stagger: true }),
      clock: () => now,
      name: 'staggered',
    });
    staggered.limitSync('a');
    expect(calls).toEqual([
      'bind:sluice:default:{',
      'limitOne:consume:a',
      'limitOne:peek:a',
      'limitOne:peek:a',
      'bind:sluice:two:{',
      'limit:consume',
      'bind:sluice:staggered:{',
      'limit:consume',
    ]);
  });
});
