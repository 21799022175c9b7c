/**
 * take and reserve give the same answers on every executor that carries them: memory and SQLite against core's
 * evaluate() (the conformance reference store), decision for decision and field for field, over random sequences
 * mixing all five operations with backward clock steps, huge gaps, cost 0 and costs above capacity, for every algorithm
 * and for compound rules. Redis and Upstash run them in the Lua script: packages/stores/redis/test/differential.test.ts holds the
 * script equal to evaluate() event by event, and test/cross-store/same-decisions.test.ts puts them beside memory and SQLite
 * through the limiters' take and reserve.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import fc from 'fast-check';
import { createLimiter, type Decision, type Rule, type Store, type SyncLimiter } from '@sluice/core';
import type { Operation, ResolvedRule } from '@sluice/core/store';
import { referenceStore } from '@sluice/conformance';
import { memoryStore } from '@sluice/memory';
import { sqliteStore } from '@sluice/sqlite';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { ALGORITHMS, compoundRules, ruleOf, startMs } from '../harness/arbitraries.js';

interface OperationEvent {
  readonly deltaMs: number;
  readonly operation: Operation;
  readonly cost: number;
  readonly maxWaitMs: number;
}

function operationEvents(capacity: number, maxLength: number): fc.Arbitrary<OperationEvent[]> {
  const event = fc.record(
    {
      deltaMs: fc.oneof(
        { weight: 3, arbitrary: fc.constant(0) },
        { weight: 6, arbitrary: fc.integer({ min: 1, max: 2_000 }) },
        { weight: 3, arbitrary: fc.integer({ min: -2_000, max: -1 }) },
        { weight: 1, arbitrary: fc.integer({ min: 0, max: 1e10 }) },
      ),
      operation: fc.constantFrom<Operation>('consume', 'peek', 'refund', 'take', 'take', 'reserve', 'reserve'),
      cost: fc.oneof(
        { weight: 5, arbitrary: fc.constant(1) },
        { weight: 3, arbitrary: fc.integer({ min: 0, max: capacity }) },
        { weight: 1, arbitrary: fc.integer({ min: capacity + 1, max: capacity + 3 }) },
      ),
      maxWaitMs: fc.oneof(fc.constant(0), fc.integer({ min: 0, max: 5_000 }), fc.integer({ min: 0, max: 2 ** 40 })),
    },
    { noNullPrototype: true },
  );
  return fc.array(event, { minLength: 1, maxLength });
}

let directory: string;
let db: Database.Database;
let stores: Array<{ name: string; store: Store }>;
let run = 0;
const stats = { sequences: 0, decisions: 0, take: 0, reserve: 0 };

beforeAll(() => {
  directory = mkdtempSync(join(tmpdir(), 'sluice-operations-'));
  db = new Database(join(directory, 'limits.db'));
  stores = [
    { name: 'reference (core evaluate)', store: referenceStore() },
    { name: 'memory', store: memoryStore() },
    { name: 'sqlite', store: sqliteStore(db) },
  ];
});

afterAll(() => {
  console.log(
    `[operations] ${stats.sequences} sequences, ${stats.decisions} decisions (${stats.take} take, ${stats.reserve} reserve) on ${stores.length} executors`,
  );
  db?.close();
  if (directory !== undefined) rmSync(directory, { recursive: true, force: true });
});

function call(limiter: SyncLimiter, event: OperationEvent): Decision {
  const cost = event.cost;
  switch (event.operation) {
    case 'consume':
      return limiter.limitSync('id', { cost });
    case 'peek':
      return limiter.peekSync('id', { cost });
    case 'refund':
      return limiter.refundSync('id', { cost });
    case 'take':
      return limiter.takeSync('id', { cost });
    case 'reserve':
      return limiter.reserveSync('id', { cost, maxWait: event.maxWaitMs });
  }
}

function agree(rules: readonly ResolvedRule[], start: number, sequence: readonly OperationEvent[]): void {
  stats.sequences++;
  let now = start;
  const name = `m${run++}`;
  const limiters = stores.map(({ name: store, store: s }) => ({
    store,
    limiter: createLimiter({
      store: s,
      rules: rules as unknown as readonly Rule[],
      name,
      clock: () => now,
      circuitBreaker: false,
      onStoreError: 'deny',
    }) as SyncLimiter,
  }));
  const history: string[] = [];
  for (const event of sequence) {
    now = Math.max(start - 10_000, now + event.deltaMs);
    history.push(
      `now=${now} ${event.operation}(cost ${event.cost}${event.operation === 'reserve' ? `, maxWaitMs ${event.maxWaitMs}` : ''})`,
    );
    const [reference, ...others] = limiters.map(({ store, limiter }) => ({ store, decision: call(limiter, event) }));
    stats.decisions++;
    if (event.operation === 'take' || event.operation === 'reserve') stats[event.operation]++;
    expect(reference!.decision.degraded, history.join(' → ')).toBe(false);
    for (const other of others) {
      expect(other.decision, `${other.store} against ${reference!.store}, rules ${JSON.stringify(rules)}: ${history.join(' → ')}`).toEqual(
        reference!.decision,
      );
    }
  }
}

describe('take and reserve: memory and SQLite equal core evaluate', () => {
  for (const algorithm of ALGORITHMS) {
    test(`${algorithm}: random sequences of all five operations with backward steps, huge gaps, cost 0 and oversize costs`, () => {
      fc.assert(
        fc.property(
          ruleOf(algorithm, 'r').chain((rule) => fc.tuple(fc.constant([rule]), startMs, operationEvents(rule.limit, 12))),
          ([rules, start, sequence]) => agree(rules, start, sequence),
        ),
        { numRuns: 60 },
      );
    }, 120_000);
  }

  test('compound rules: one grant on every rule, the latest start over the rules, the same on every executor', () => {
    fc.assert(
      fc.property(
        compoundRules.chain((rules) => fc.tuple(fc.constant(rules), startMs, operationEvents(Math.max(...rules.map((r) => r.limit)), 12))),
        ([rules, start, sequence]) => agree(rules, start, sequence),
      ),
      { numRuns: 80 },
    );
  }, 120_000);
});
