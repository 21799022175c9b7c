/**
 * JS-vs-Lua differential: fast-check event sequences run through core's `evaluate()` (the reference) and through
 * the Redis store's Lua script on a real redis-server (client clock mode), and every event must agree exactly:
 * allowed, remaining, resetAt, retryAt per rule (granted for take, startAt for reserve), the state written and
 * its expiry, in all five operations (consume, peek, refund, take, reserve). The script is called with
 * the store's own codec (`encodeCall`, `parseCallReply`): one decision per call, as a lone decision travels,
 * and several decisions per call, as the store's batcher sends decisions issued together; and both ways the
 * store runs it: EVALSHA of LIMIT_SCRIPT and FCALL of the Redis Function LIMIT_LIBRARY defines. Every run is made
 * through each client the store accepts (ioredis, node-redis 5 on RESP2 and RESP3, node-redis 4, Valkey GLIDE), so
 * the replies are compared as each library hands them over.
 *
 * Each call is one MULTI/EXEC: GET the rules' states, TIME, EVALSHA, TIME, then GET and PEXPIRETIME them again.
 * Reading the state in the same atomic block as the script makes the comparison exact even when Redis expires a
 * key in real time while the logical (client) clock says it should still be there: the reference steps the state
 * the script saw. A JS model that chains its own writes checks, in addition, that the states Redis holds are the
 * ones core would hold.
 */
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import fc from 'fast-check';
import { Redis } from 'ioredis';
import { decodeState, encodeState, evaluate, type LimitRequest, type ResolvedRule, type State } from '@sluice/core/store';
import {
  CLIENT_CLOCK_EXPIRY_SLACK_MS,
  LIMIT_FUNCTION,
  LIMIT_LIBRARY,
  LIMIT_SCRIPT,
  LIMIT_SCRIPT_SHA1,
  encodeCall,
  parseCallReply,
} from '@sluice/redis-script';
import { startRedis, type RedisServer } from '../../../../test/harness/redis.js';
import { ALGORITHMS, compoundRules, events, ruleOf, ruleSets, startMs, type Event } from '../../../../test/harness/arbitraries.js';
import { CLIENTS, type OpenClient } from './clients.js';

let server: RedisServer;
let client: Redis;
/** The client the current run talks through. */
let through: OpenClient;
let sequence = 0;
const stats = {
  sequences: 0,
  events: 0,
  writes: 0,
  expiredEarly: 0,
  calls: 0,
  batchedCalls: 0,
  batchedDecisions: 0,
  repeatedKeys: 0,
  operations: { consume: 0, peek: 0, refund: 0, take: 0, reserve: 0 },
  granted: 0,
  booked: 0,
  bookedLater: 0,
  tooFar: 0,
};

beforeAll(async () => {
  server = await startRedis();
  client = new Redis({ host: server.host, port: server.port, lazyConnect: true });
  await client.connect();
  expect(await client.script('LOAD', LIMIT_SCRIPT)).toBe(LIMIT_SCRIPT_SHA1);
  await client.function('LOAD', LIMIT_LIBRARY);
});

/** How the script is run: as the store does by default (a Redis Function), or as a script (Cluster, Upstash). */
type Via = 'fcall' | 'evalsha';
let via: Via = 'evalsha';

afterAll(async () => {
  console.log(
    `[differential] ${stats.sequences} sequences, ${stats.events} events in ${stats.calls} script calls (${stats.batchedCalls} carrying several decisions), ${stats.writes} writes compared; ${stats.expiredEarly} states expired by Redis real time before the logical clock reached them`,
  );
  console.log(
    `[differential] operations ${JSON.stringify(stats.operations)}; takes that granted units ${stats.granted}; reservations booked ${stats.booked} (${stats.bookedLater} of them after now), refused as too far ${stats.tooFar}`,
  );
  client?.disconnect();
  await server?.stop();
});

/** One identity of a differential run: its base key and its rules. */
interface Identity {
  readonly key: string;
  readonly rules: readonly ResolvedRule[];
}

/** An event of a batched run: which identity decides, and when. */
interface TaggedEvent extends Event {
  readonly who: number;
}

/** Redis's clock in ms as Redis keeps it (floor of microseconds / 1000). */
const redisMs = (time: unknown) => Number((time as string[])[0]) * 1000 + Math.floor(Number((time as string[])[1]) / 1000);

/**
 * Runs `calls` (each a list of events, in order) through the script, one EVALSHA per call, and through core's
 * `evaluate()` one event after the other; compares every outcome, then each key's stored state and expiry after
 * the call with the last write the reference made to it.
 */
async function runCalls(identities: readonly Identity[], start: number, calls: ReadonlyArray<readonly TaggedEvent[]>): Promise<void> {
  stats.sequences++;
  let now = start;
  const model = new Map<string, State | undefined>();
  const keyRules = new Map<string, ResolvedRule>();
  for (const { key, rules } of identities) for (const rule of rules) keyRules.set(`${key}:${rule.id}`, rule);
  for (const [index, call] of calls.entries()) {
    const requests: LimitRequest[] = call.map((event) => {
      now = Math.max(0, now + event.deltaMs);
      const { key, rules } = identities[event.who]!;
      return {
        key,
        rules,
        cost: event.cost,
        operation: event.operation,
        now,
        ...(event.operation === 'reserve' ? { maxWaitMs: event.maxWaitMs ?? 0 } : {}),
      };
    });
    const { keys, args } = encodeCall(requests, 'client');
    const distinct = [...new Set(keys)];
    const script = via === 'fcall' ? ['FCALL', LIMIT_FUNCTION] : ['EVALSHA', LIMIT_SCRIPT_SHA1];
    // Rejects if any command failed.
    const all = await through.atomic([
      ...distinct.map((k) => ['GET', k]),
      ['TIME'],
      [...script, String(keys.length), ...keys, ...args],
      ['TIME'],
      ...distinct.map((k) => ['GET', k]),
      ...distinct.map((k) => ['PEXPIRETIME', k]),
    ]);
    const n = distinct.length;
    const [timeBefore, timeAfter] = [redisMs(all[n]), redisMs(all[n + 2])];
    const before = all.slice(0, n).map((v) => decodeState(v as string | null));
    const reply = all[n + 1];
    const after = all.slice(n + 3, 2 * n + 3) as Array<string | null>;
    const expireAt = all.slice(2 * n + 3) as number[];
    const where = (i: number) =>
      `call ${index}, decision ${i} ${JSON.stringify(call[i])} at ${requests[i]!.now}, states before the call ${JSON.stringify(before)}`;
    stats.calls++;
    if (call.length > 1) {
      stats.batchedCalls++;
      stats.batchedDecisions += call.length;
      stats.repeatedKeys += call.length - new Set(call.map((event) => event.who)).size;
    }

    // The model chains core's own writes; Redis may only have dropped a state early (real-time expiry).
    const current = new Map<string, State | undefined>();
    for (const [i, k] of distinct.entries()) {
      if (before[i] !== undefined) expect(before[i], `${where(0)}: stored state of ${k}`).toEqual(model.get(k));
      else if (model.get(k) !== undefined) stats.expiredEarly++;
      current.set(k, before[i]);
    }

    // The reference: the call's decisions one after the other, each seeing the writes of the previous ones.
    const actual = parseCallReply(reply, requests, 'client');
    const lastWrite = new Map<string, { state: State; ttlMs: number }>();
    for (const [i, request] of requests.entries()) {
      const ruleKeys = request.rules.map((rule) => `${request.key}:${rule.id}`);
      const expected = evaluate(
        request.rules,
        ruleKeys.map((k) => current.get(k)),
        request.now,
        request.cost,
        request.operation,
        request.maxWaitMs,
      );
      stats.operations[request.operation]++;
      expect(actual[i]!.now, where(i)).toBe(request.now);
      expect(actual[i]!.outcomes, where(i)).toEqual(expected.outcomes);
      // The decision as a whole is every rule's allowed (the script sends no separate flag).
      expect(
        actual[i]!.outcomes.every((o) => o.allowed),
        where(i),
      ).toBe(expected.allowed);
      const first = expected.outcomes[0]!;
      if (request.operation === 'take' && first.granted! > 0) stats.granted++;
      if (request.operation === 'reserve' && request.cost > 0) {
        if (expected.allowed) {
          stats.booked++;
          if (first.startAt! > request.now) stats.bookedLater++;
        } else if (first.startAt !== -1) stats.tooFar++;
      }
      if (expected.writes !== undefined) {
        stats.writes++;
        for (const [r, write] of expected.writes.entries()) {
          // What a reader gets back: an empty sliding log is stored as '' and read as no state, like decodeState('').
          current.set(ruleKeys[r]!, write.ttlMs > 0 ? decodeState(encodeState(write.state)) : undefined);
          lastWrite.set(ruleKeys[r]!, write);
        }
      }
      stats.events++;
    }

    for (const [i, k] of distinct.entries()) {
      const write = lastWrite.get(k);
      if (write === undefined) {
        expect(decodeState(after[i]), `call ${index}: untouched ${k}`).toEqual(before[i]);
      } else if (write.ttlMs > 0) {
        expect(after[i], `call ${index}: written ${k} (${keyRules.get(k)!.algorithm})`).toBe(encodeState(write.state));
        // Every key carries its expiry: the last step's ttlMs plus the client-clock slack, from Redis's clock at
        // the SET (which lies between the two TIME readings; under load Redis may be descheduled inside EXEC).
        const expiry = write.ttlMs + CLIENT_CLOCK_EXPIRY_SLACK_MS;
        expect(expireAt[i]!, `call ${index}: PEXPIRETIME of ${k}`).toBeGreaterThanOrEqual(timeBefore + expiry);
        expect(expireAt[i]!, `call ${index}: PEXPIRETIME of ${k}`).toBeLessThanOrEqual(timeAfter + expiry);
      } else {
        expect(after[i], `call ${index}: ${k} with ttl ${write.ttlMs} is deleted`).toBeNull();
      }
      model.set(k, current.get(k));
    }
  }
}

/** One identity, one decision per call: the path of every decision that travels alone. */
function runSequence(rules: readonly ResolvedRule[], start: number, list: readonly Event[]): Promise<void> {
  const identity = { key: `diff:{s${++sequence}}`, rules };
  return runCalls(
    [identity],
    start,
    list.map((event) => [{ ...event, who: 0 }]),
  );
}

const maxCostOf = (rules: readonly ResolvedRule[]) => Math.max(...rules.map((r) => r.limit));

const runs = CLIENTS.flatMap((kind) => (['evalsha', 'fcall'] as const).map((how) => ({ kind, how })));
const opened = new Map<string, OpenClient>();
afterAll(async () => {
  for (const open of opened.values()) await open.close();
});

describe.each(runs)('Lua script equals core evaluate(), event by event, run by $how through $kind.name', ({ kind, how }) => {
  beforeAll(async () => {
    via = how;
    if (!opened.has(kind.name)) opened.set(kind.name, await kind.open(server));
    through = opened.get(kind.name)!;
  });

  for (const algorithm of ALGORITHMS) {
    test(algorithm, async () => {
      await fc.assert(
        fc.asyncProperty(
          ruleOf(algorithm, 'r').chain((rule) => fc.tuple(fc.constant([rule]), startMs, events(rule.limit))),
          ([rules, start, list]) => runSequence(rules, start, list),
        ),
        { numRuns: 40 },
      );
    });
  }

  test('compound rules (all-or-nothing across algorithms)', async () => {
    await fc.assert(
      fc.asyncProperty(
        compoundRules.chain((rules) => fc.tuple(fc.constant(rules), startMs, events(maxCostOf(rules)))),
        ([rules, start, list]) => runSequence(rules, start, list),
      ),
      { numRuns: 80 },
    );
  });

  test('batched calls: decisions of several identities (one or more rules each) in one call equal core, one after the other', async () => {
    const [batchedBefore, decisionsBefore, repeatsBefore] = [stats.batchedCalls, stats.batchedDecisions, stats.repeatedKeys];
    // Up to three identities with their own rule sets, events interleaved, cut into calls of 1 to 8 decisions:
    // the same identity may decide several times in a call (a hot key), and rule sets alternate (several spec
    // entries), as they do when limiters share a store.
    const arbitrary = fc.array(fc.oneof(compoundRules, ruleSets), { minLength: 1, maxLength: 3 }).chain((sets) =>
      fc.tuple(
        fc.constant(sets),
        startMs,
        events(Math.max(...sets.flat().map((r) => r.limit)), 12),
        fc.array(fc.nat(sets.length - 1), { minLength: 40, maxLength: 40 }),
        fc.array(fc.oneof({ weight: 1, arbitrary: fc.constant(1) }, { weight: 4, arbitrary: fc.integer({ min: 2, max: 8 }) }), {
          minLength: 1,
          maxLength: 40,
        }),
      ),
    );
    await fc.assert(
      fc.asyncProperty(arbitrary, async ([sets, start, list, owners, sizes]) => {
        const run = ++sequence;
        const identities = sets.map((rules, i) => ({ key: `batch:{b${run}-${i}}`, rules }));
        const tagged = list.map((event, i) => ({ ...event, who: owners[i % owners.length]! }));
        const calls: TaggedEvent[][] = [];
        for (let at = 0, s = 0; at < tagged.length; s++) {
          const size = sizes[s % sizes.length]!;
          calls.push(tagged.slice(at, at + size));
          at += size;
        }
        await runCalls(identities, start, calls);
      }),
      { numRuns: 60 },
    );
    console.log(
      `[differential] batched (${how}, ${kind.name}): ${stats.batchedCalls - batchedBefore} calls carrying ${stats.batchedDecisions - decisionsBefore} decisions, ${stats.repeatedKeys - repeatsBefore} of them on an identity already decided earlier in the same call`,
    );
    expect(stats.batchedCalls - batchedBefore).toBeGreaterThan(50);
    expect(stats.repeatedKeys - repeatsBefore).toBeGreaterThan(50);
  });

  test('stored text that is not a clean state is read exactly as core decodeState reads it', async () => {
    const { fixedWindow, tokenBucket } = await import('@sluice/core');
    const raws = ['1,2', '1,,2', ',5', '7,', 'a,1', '1.5,2', ' 3,4', '1e3,2', '9007199254740993,1', '-4,2', '', 'x'];
    for (const rule of [fixedWindow({ id: 'f', limit: 5, window: 1000 }), tokenBucket({ id: 't', capacity: 5, refillRate: 1 })]) {
      for (const raw of raws) {
        const key = `raw:{${++sequence}}`;
        const request: LimitRequest = { key, rules: [rule], cost: 1, operation: 'peek', now: 1_700_000_000_000 };
        const { keys, args } = encodeCall([request], 'client');
        await through.command(['SET', keys[0]!, raw]);
        const script = how === 'fcall' ? ['FCALL', LIMIT_FUNCTION] : ['EVALSHA', LIMIT_SCRIPT_SHA1];
        const reply = await through.command([...script, '1', keys[0]!, ...args]);
        const expected = evaluate([rule], [decodeState(raw)], request.now, 1, 'peek');
        expect(parseCallReply(reply, [request], 'client')[0]!.outcomes, `${rule.algorithm} over ${JSON.stringify(raw)}`).toEqual(
          expected.outcomes,
        );
      }
    }
  });

  test('take and reserve were exercised: units granted, bookings now and later, reservations refused as too far', () => {
    expect(stats.operations.take).toBeGreaterThan(100);
    expect(stats.operations.reserve).toBeGreaterThan(100);
    expect(stats.granted).toBeGreaterThan(50);
    expect(stats.bookedLater).toBeGreaterThan(20);
    expect(stats.tooFar).toBeGreaterThan(20);
  });

  test('regression: sub-millisecond GCRA and large products keep integer exactness', async () => {
    // limit 5000 per 1 ms period: TAT remainders in 1/5000 ms; capacity × interval near the 2^53 guard.
    const { gcra, tokenBucket } = await import('@sluice/core');
    const rules = [
      gcra({ id: 'g', limit: 5000, period: 1, burst: 7 }),
      tokenBucket({ id: 't', capacity: 1_000_000, refillRate: 3, interval: 86_400_000 }),
    ];
    const list: Event[] = Array.from({ length: 30 }, (_, i) => ({
      deltaMs: i % 3,
      cost: (i * 7) % 9,
      operation: i % 5 === 4 ? 'refund' : 'consume',
    }));
    await runSequence(rules, 1_700_000_000_123, list);
  });
});
