/**
 * JS-vs-Lua differential: fast-check event sequences run through core's `evaluate()` (the reference) and through
 * the Redis store's Lua script on a real redis-server (client clock mode), and every event must agree exactly:
 * allowed, remaining, resetAt, retryAt per rule, the state written and its expiry.
 *
 * Each event is one MULTI/EXEC: GET the rules' states, TIME, EVALSHA, TIME, then GET and PEXPIRETIME them again. Reading the state in
 * the same atomic block as the script makes the comparison exact even when Redis expires a key in real time
 * while the logical (client) clock says it should still be there: the reference steps the state the script saw.
 * A JS model that chains its own writes checks, in addition, that the states Redis holds are the ones core
 * would hold.
 */
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import fc from 'fast-check';
import { Redis } from 'ioredis';
import { decodeState, encodeState, evaluate, type LimitRequest, type ResolvedRule, type State } from '@sluice/core';
import { CLIENT_CLOCK_EXPIRY_SLACK_MS, LIMIT_SCRIPT, LIMIT_SCRIPT_SHA1, parseReply, scriptArguments, scriptKeys } from '@sluice/redis/scripts';
import { startRedis, type RedisServer } from '../harness/redis.js';
import { ALGORITHMS, compoundRules, events, ruleOf, startMs, type Event } from './arbitraries.js';

let server: RedisServer;
let client: Redis;
let sequence = 0;
const stats = { sequences: 0, events: 0, writes: 0, expiredEarly: 0 };

beforeAll(async () => {
  server = await startRedis();
  client = new Redis({ host: server.host, port: server.port, lazyConnect: true });
  await client.connect();
  expect(await client.script('LOAD', LIMIT_SCRIPT)).toBe(LIMIT_SCRIPT_SHA1);
});

afterAll(async () => {
  console.log(`[differential] ${stats.sequences} sequences, ${stats.events} events, ${stats.writes} writes compared; ${stats.expiredEarly} states expired by Redis real time before the logical clock reached them`);
  client?.disconnect();
  await server?.stop();
});

async function runSequence(rules: readonly ResolvedRule[], start: number, list: readonly Event[]): Promise<void> {
  stats.sequences++;
  const key = `diff:{s${++sequence}}`;
  let now = start;
  let model: Array<State | undefined> = rules.map(() => undefined);
  for (const [index, event] of list.entries()) {
    now = Math.max(0, now + event.deltaMs);
    const request: LimitRequest = { key, rules, cost: event.cost, mode: event.mode, now };
    const keys = scriptKeys(request);
    const multi = client.multi();
    for (const k of keys) multi.get(k);
    multi.time();
    multi.evalsha(LIMIT_SCRIPT_SHA1, keys.length, ...keys, ...scriptArguments(request, 'client'));
    multi.time();
    for (const k of keys) multi.get(k);
    for (const k of keys) multi.call('PEXPIRETIME', k);
    const results = (await multi.exec())!;
    for (const [error] of results) expect(error).toBeNull();
    const all = results.map(([, value]) => value);
    // Redis's clock around the script, in ms as Redis keeps it (floor of microseconds / 1000).
    const redisMs = (time: unknown) => Number((time as string[])[0]) * 1000 + Math.floor(Number((time as string[])[1]) / 1000);
    const n = keys.length;
    const [timeBefore, timeAfter] = [redisMs(all[n]), redisMs(all[n + 2])];
    const values = [...all.slice(0, n), ...all.slice(n + 1, n + 2), ...all.slice(n + 3)];
    const before = values.slice(0, n).map((v) => decodeState(v as string | null));
    const actual = parseReply(values[n], rules);
    const after = values.slice(n + 1, 2 * n + 1) as Array<string | null>;
    const expireAt = values.slice(2 * n + 1) as number[];
    const where = `event ${index} ${JSON.stringify(event)} at ${now}, states ${JSON.stringify(before)}`;

    // The model chains core's own writes; Redis may only have dropped a state early (real-time expiry).
    for (let i = 0; i < n; i++) {
      if (before[i] !== undefined) expect(before[i], `${where}: stored state of ${rules[i]!.id}`).toEqual(model[i]);
      else if (model[i] !== undefined) stats.expiredEarly++;
    }

    const expected = evaluate(rules, before, now, event.cost, event.mode);
    expect(actual.now, where).toBe(now);
    expect(actual.outcomes, where).toEqual(expected.outcomes);
    const allAllowed = (values[n] as number[])[1] === 1;
    expect(allAllowed, where).toBe(expected.allowed);

    if (expected.writes === undefined) {
      for (let i = 0; i < n; i++) expect(decodeState(after[i]), `${where}: untouched ${rules[i]!.id}`).toEqual(before[i]);
      model = before;
    } else {
      stats.writes++;
      // What a reader gets back: an empty sliding log is stored as '' and read as no state, like decodeState('').
      model = expected.writes.map((w) => (w.ttlMs > 0 ? decodeState(encodeState(w.state)) : undefined));
      for (let i = 0; i < n; i++) {
        const write = expected.writes[i]!;
        if (write.ttlMs > 0) {
          expect(after[i], `${where}: written ${rules[i]!.id}`).toBe(encodeState(write.state));
          // Every key carries its expiry: the step's ttlMs plus the client-clock slack, from Redis's clock at the SET
          // (which lies between the two TIME readings; under load Redis may be descheduled inside EXEC).
          const expiry = write.ttlMs + CLIENT_CLOCK_EXPIRY_SLACK_MS;
          expect(expireAt[i]!, `${where}: PEXPIRETIME of ${rules[i]!.id}`).toBeGreaterThanOrEqual(timeBefore + expiry);
          expect(expireAt[i]!, `${where}: PEXPIRETIME of ${rules[i]!.id}`).toBeLessThanOrEqual(timeAfter + expiry);
        } else {
          expect(after[i], `${where}: ${rules[i]!.id} with ttl ${write.ttlMs} is deleted`).toBeNull();
        }
      }
    }
    stats.events++;
  }
}

const maxCostOf = (rules: readonly ResolvedRule[]) => Math.max(...rules.map((r) => r.limit));

describe('Lua script equals core evaluate(), event by event', () => {
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

  test('stored text that is not a clean state is read exactly as core decodeState reads it', async () => {
    const { fixedWindow, tokenBucket } = await import('@sluice/core');
    const raws = ['1,2', '1,,2', ',5', '7,', 'a,1', '1.5,2', ' 3,4', '1e3,2', '9007199254740993,1', '-4,2', '', 'x'];
    for (const rule of [fixedWindow({ id: 'f', limit: 5, window: 1000 }), tokenBucket({ id: 't', capacity: 5, refillRate: 1 })]) {
      for (const raw of raws) {
        const key = `raw:{${++sequence}}`;
        const request: LimitRequest = { key, rules: [rule], cost: 1, mode: 'peek', now: 1_700_000_000_000 };
        const keys = scriptKeys(request);
        await client.set(keys[0]!, raw);
        const reply = await client.evalsha(LIMIT_SCRIPT_SHA1, 1, keys[0]!, ...scriptArguments(request, 'client'));
        const expected = evaluate([rule], [decodeState(raw)], request.now, 1, 'peek');
        expect(parseReply(reply, [rule]).outcomes, `${rule.algorithm} over ${JSON.stringify(raw)}`).toEqual(expected.outcomes);
      }
    }
  });

  test('regression: sub-millisecond GCRA and large products keep integer exactness', async () => {
    // limit 5000 per 1 ms period: TAT remainders in 1/5000 ms; capacity × interval near the 2^53 guard.
    const { gcra, tokenBucket } = await import('@sluice/core');
    const rules = [gcra({ id: 'g', limit: 5000, period: 1, burst: 7 }), tokenBucket({ id: 't', capacity: 1_000_000, refillRate: 3, interval: 86_400_000 })];
    const list: Event[] = Array.from({ length: 30 }, (_, i) => ({ deltaMs: i % 3, cost: (i * 7) % 9, mode: i % 5 === 4 ? 'refund' : 'consume' }));
    await runSequence(rules, 1_700_000_000_123, list);
  });
});
