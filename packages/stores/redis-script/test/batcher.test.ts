/**
 * The batcher that both the Redis and the Upstash stores use, on a real redis-server: which decisions share a
 * script call, how a call's failure reaches each of its decisions, and the bounds on one call. Every call is a
 * real EVALSHA; the test only records what was sent.
 */
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { Redis } from 'ioredis';
import { fixedWindow, isSluiceError } from '@sluice/core';
import type { LimitRequest, LimitResult } from '@sluice/core/store';
import { LIMIT_SCRIPT, LIMIT_SCRIPT_SHA1, LimitBatcher, type ScriptCall } from '../src/index.js';
import { startRedis, type RedisServer } from '../../../../test/harness/redis.js';

let server: RedisServer;
let client: Redis;
let sequence = 0;

beforeAll(async () => {
  server = await startRedis();
  client = new Redis({ host: server.host, port: server.port });
  await client.script('LOAD', LIMIT_SCRIPT);
});

afterAll(async () => {
  client?.disconnect();
  await server?.stop();
});

/** A real script call that records the decisions each call carried. */
function recorder(): { call: ScriptCall; calls: Array<{ keys: number; decisions: number }> } {
  const calls: Array<{ keys: number; decisions: number }> = [];
  const call: ScriptCall = (keys, args, requests) => {
    calls.push({ keys: keys.length, decisions: requests.length });
    return client.evalsha(LIMIT_SCRIPT_SHA1, keys.length, ...keys, ...args);
  };
  return { call, calls };
}

const rule = fixedWindow({ limit: 1_000, window: '1h' });
const request = (identity: string, rules = [rule]): LimitRequest => ({
  key: `batcher:{${identity}}`,
  rules,
  cost: 1,
  operation: 'consume',
  now: 1_700_000_000_000,
});

describe('LimitBatcher', () => {
  test('decisions issued on consecutive microtask turns share one call (default wait: until a turn brings none)', async () => {
    const { call, calls } = recorder();
    const batcher = new LimitBatcher({ clock: 'client', call });
    const id = `m${++sequence}`;
    const pending: Array<Promise<LimitResult>> = [];
    for (let i = 0; i < 5; i++) {
      pending.push(batcher.limit(request(id)));
      await Promise.resolve();
    }
    const results = await Promise.all(pending);
    expect(calls).toEqual([{ keys: 5, decisions: 5 }]);
    expect(results.map((r) => r.outcomes[0]!.remaining)).toEqual([999, 998, 997, 996, 995]);
    // A decision alone is sent after one quiet microtask turn, never on a timer.
    await batcher.limit(request(id));
    expect(calls).toHaveLength(2);
  });

  test('a tick holding a reserve is sent at deferReserve, not at the end of the turn: the decisions before it in the tick go with it, in order', async () => {
    const { call, calls } = recorder();
    const turnEnds: Array<() => void> = [];
    const batcher = new LimitBatcher({
      clock: 'client',
      call,
      defer: (flush) => turnEnds.push(flush),
      deferReserve: (flush) => queueMicrotask(flush),
    });
    const id = `r${++sequence}`;
    const consumed = batcher.limit(request(id));
    const reserved = batcher.limit({ ...request(id), operation: 'reserve', maxWaitMs: 1000 });
    const [first, second] = await Promise.all([consumed, reserved]);
    // Both answered with the end-of-turn flush never run: one call, the consume first.
    expect(calls).toEqual([{ keys: 2, decisions: 2 }]);
    expect(first.outcomes[0]!.remaining).toBe(999);
    expect(second.outcomes[0]!.remaining).toBe(998);
    for (const flush of turnEnds) flush();
    expect(calls).toHaveLength(1);
  });

  test('a call stays under 1,024 keys however many decisions wait: compound decisions are split into several calls', async () => {
    const { call, calls } = recorder();
    const batcher = new LimitBatcher({ clock: 'client', call });
    const rules = Array.from({ length: 300 }, (_, i) => fixedWindow({ id: `r${i}`, limit: 5, window: '1h' }));
    const results = await Promise.all(Array.from({ length: 7 }, (_, i) => batcher.limit(request(`k${++sequence}-${i}`, rules))));
    expect(results.every((r) => r.outcomes.length === 300 && r.outcomes.every((o) => o.allowed))).toBe(true);
    expect(calls).toEqual([
      { keys: 900, decisions: 3 },
      { keys: 900, decisions: 3 },
      { keys: 300, decisions: 1 },
    ]);
  });

  test("splitWaves: a tick's first call leaves once it holds a quarter of the previous tick's wave (8 to maxBatch) while no call is in flight; the rest leave in calls of maxBatch or at the end of the tick", async () => {
    const { call, calls } = recorder();
    const batcher = new LimitBatcher({ clock: 'client', call, maxBatch: 40, splitWaves: true });
    const wave = async (size: number) => {
      calls.length = 0;
      await Promise.all(Array.from({ length: size }, (_, i) => batcher.limit(request(`w${++sequence}-${i}`))));
      return calls.map((c) => c.decisions);
    };
    expect(await wave(20)).toEqual([8, 12]); // after a quiet start: the first call at 8, the rest when the tick ends
    expect(await wave(64)).toEqual([8, 40, 16]); // a quarter of 20, at least 8; then full calls while one is in flight
    expect(await wave(64)).toEqual([16, 40, 8]); // a quarter of 64
    expect(await wave(300)).toEqual([16, ...Array(7).fill(40), 4]);
    expect(await wave(100)).toEqual([40, 40, 20]); // a quarter of 300, at most maxBatch
    expect(await wave(1)).toEqual([1]); // alone: sent when the tick is over, never waiting for company
    // A call still waiting for its reply: the next tick's decisions do not leave early, they leave together.
    let release!: () => void;
    const held = new Promise<void>((resolve) => (release = resolve));
    const slow: ScriptCall = (keys, args, requests) => held.then(() => call(keys, args, requests));
    const busy = new LimitBatcher({ clock: 'client', call: slow, maxBatch: 40, splitWaves: true });
    calls.length = 0;
    const first = busy.limit(request(`b${++sequence}`));
    await Promise.resolve().then(() => new Promise((resolve) => setImmediate(resolve))); // the first call is sent, unanswered
    const rest = Array.from({ length: 20 }, (_, i) => busy.limit(request(`b${++sequence}-${i}`)));
    release();
    await Promise.all([first, ...rest]);
    expect(calls.map((c) => c.decisions)).toEqual([1, 20]);
    // Without splitWaves (the Upstash store: every call is a request), a tick leaves in as few calls as maxBatch allows.
    const whole = new LimitBatcher({ clock: 'client', call, maxBatch: 40 });
    calls.length = 0;
    await Promise.all(Array.from({ length: 100 }, (_, i) => whole.limit(request(`x${++sequence}-${i}`))));
    expect(calls.map((c) => c.decisions)).toEqual([40, 40, 20]);
  });

  test('groups: one call per group; a request without a group travels alone at once', async () => {
    const { call, calls } = recorder();
    const batcher = new LimitBatcher({ clock: 'client', call, group: (r) => (r.key.includes('{solo') ? undefined : r.key) });
    const a = `ga${++sequence}`;
    const b = `gb${sequence}`;
    const solo = batcher.limit(request(`solo${sequence}`));
    expect(calls).toEqual([{ keys: 1, decisions: 1 }]); // sent before limit() returned
    await Promise.all([batcher.limit(request(a)), batcher.limit(request(b)), batcher.limit(request(a)), solo]);
    expect(calls.slice(1).sort((x, y) => y.decisions - x.decisions)).toEqual([
      { keys: 2, decisions: 2 },
      { keys: 1, decisions: 1 },
    ]);
  });

  test('a call that fails rejects each of its decisions with the error; a malformed reply is a STORE_ERROR for each', async () => {
    const failing = new LimitBatcher({ clock: 'client', call: () => Promise.reject(new Error('ECONNRESET')) });
    const failed = await Promise.allSettled([failing.limit(request('f1')), failing.limit(request('f2'))]);
    expect(failed.map((r) => r.status === 'rejected' && (r.reason as Error).message)).toEqual(['ECONNRESET', 'ECONNRESET']);

    const throwing = new LimitBatcher({
      clock: 'client',
      call: () => {
        throw new Error('thrown, not rejected');
      },
    });
    await expect(throwing.limit(request('t1'))).rejects.toThrow('thrown, not rejected');

    const garbled = new LimitBatcher({ clock: 'client', call: () => Promise.resolve([1, 2, 3]) });
    const bad = await Promise.allSettled([garbled.limit(request('g1')), garbled.limit(request('g2'))]);
    for (const result of bad) {
      expect(result.status).toBe('rejected');
      const reason = (result as PromiseRejectedResult).reason as unknown;
      expect(isSluiceError(reason) && reason.code).toBe('STORE_ERROR');
      expect((reason as Error).message).toMatch(/answered 3 values, expected 9 integers/);
    }
  });

  test('store clock: the call reads Redis TIME once and every decision of it carries that instant', async () => {
    const { call, calls } = recorder();
    const batcher = new LimitBatcher({ clock: 'store', call });
    const before = Date.now();
    const results = await Promise.all(Array.from({ length: 5 }, (_, i) => batcher.limit({ ...request(`s${++sequence}-${i}`), now: 0 })));
    expect(calls).toHaveLength(1);
    expect(new Set(results.map((r) => r.now)).size).toBe(1);
    expect(results[0]!.now).toBeGreaterThanOrEqual(before - 5);
    expect(results[0]!.now).toBeLessThanOrEqual(Date.now() + 5);
  });
});
