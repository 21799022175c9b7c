/**
 * The call codec for take and reserve: how the two operations travel to the script (a `t` entry, a `v` entry with its
 * maxWaitMs) and how their one extra reply integer (granted, startAt) comes back onto every rule's outcome. The
 * script's answers themselves are held equal to core's evaluate() by packages/stores/redis/test/differential.test.ts.
 */
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { Redis } from 'ioredis';
import { fixedWindow, tokenBucket } from '@sluice/core';
import type { LimitRequest } from '@sluice/core/store';
import { LIMIT_SCRIPT, LIMIT_SCRIPT_SHA1, encodeCall, parseCallReply } from '../src/index.js';
import { startRedis, type RedisServer } from '../../../../test/harness/redis.js';

const now = 1_700_000_000_000;
const fw = fixedWindow({ id: 'fw', limit: 5, window: 60_000 });
const tb = tokenBucket({ id: 'tb', capacity: 2, refillRate: 1, interval: 1_000 });
const request = (operation: LimitRequest['operation'], cost: number, extra: Partial<LimitRequest> = {}): LimitRequest => ({
  key: 'k:{a}',
  rules: [fw, tb],
  cost,
  operation,
  now,
  ...extra,
});

describe('take and reserve in the call codec', () => {
  test('a take is `t` + cost and a reserve `v` + cost,maxWaitMs (0 when absent); each takes one KEY per rule', () => {
    const { keys, args } = encodeCall([request('take', 3), request('reserve', 2, { maxWaitMs: 1500 }), request('reserve', 1)], 'client');
    expect(args).toEqual([`@${now}`, '#fw 5 60000 0 tbs 2 1 1000', 't3', 'v2,1500', 'v1,0']);
    expect(keys).toEqual(['k:{a}:fw', 'k:{a}:tb', 'k:{a}:fw', 'k:{a}:tb', 'k:{a}:fw', 'k:{a}:tb']);
  });

  test.each([-1, 1.5, Number.NaN, 2 ** 53])(
    'a reserve with maxWaitMs %s is refused with INVALID_OPTION, appending nothing',
    (maxWaitMs) => {
      expect(() => encodeCall([request('reserve', 1, { maxWaitMs })], 'client')).toThrow(
        expect.objectContaining({ code: 'INVALID_OPTION', message: expect.stringContaining('maxWaitMs') }),
      );
    },
  );

  test('the reply carries one more integer after a take or reserve decision: granted or startAt, set on every rule', () => {
    const requests = [request('take', 3), request('consume', 1), request('reserve', 2, { maxWaitMs: 10 })];
    const reply = [
      0,
      ...[1, 2, now + 60_000, now, 1, 0, now + 3_000, now, 3], // take: two rules, then granted
      ...[0, 2, now + 60_000, now + 1, 0, 0, now + 3_000, now + 1], // consume: two rules
      ...[1, 4, now + 60_000, now, 0, 0, now + 2_000, now + 1_000, now + 1_000], // reserve: two rules, then startAt
    ];
    const [take, consume, reserve] = parseCallReply(reply, requests, 'client');
    expect(take!.outcomes.map((o) => o.granted)).toEqual([3, 3]);
    expect(take!.outcomes.every((o) => o.startAt === undefined)).toBe(true);
    expect(consume!.outcomes.map((o) => [o.granted, o.startAt])).toEqual([
      [undefined, undefined],
      [undefined, undefined],
    ]);
    expect(reserve!.outcomes.map((o) => o.startAt)).toEqual([now + 1_000, now + 1_000]);
    expect(reserve!.outcomes[1]).toEqual({
      id: 'tb',
      allowed: false,
      limit: 2,
      remaining: 0,
      resetAt: now + 2_000,
      retryAt: now + 1_000,
      startAt: now + 1_000,
    });
  });

  test('a reply without the extra integer is a STORE_ERROR for the whole call', () => {
    expect(() => parseCallReply([0, 1, 2, now, now, 1, 1, now, now], [request('take', 1)], 'client')).toThrow(
      expect.objectContaining({ code: 'STORE_ERROR' }),
    );
  });
});

describe('the script refuses a malformed take or reserve entry, writing nothing', () => {
  let server: RedisServer;
  let client: Redis;
  beforeAll(async () => {
    server = await startRedis();
    client = new Redis({ host: server.host, port: server.port, lazyConnect: true });
    await client.connect();
    await client.script('LOAD', LIMIT_SCRIPT);
  });
  afterAll(async () => {
    client?.disconnect();
    await server?.stop();
  });

  test.each(['v3', 'v3,', 'v,5', 'v-1,5', 'v1,2,3', 't', 'tx', 'w1'])('%s', async (entry) => {
    const spec = '#fw 5 60000 0';
    await expect(client.evalsha(LIMIT_SCRIPT_SHA1, 1, 'bad:{a}:fw', `@${now}`, spec, '1', entry)).rejects.toThrow(
      /sluice: malformed decision/,
    );
    expect(await client.exists('bad:{a}:fw')).toBe(0);
  });

  test('a well-formed take and reserve run in one call, each seeing the previous one write', async () => {
    const spec = '#fw 5 60000 0';
    const reply = (await client.evalsha(
      LIMIT_SCRIPT_SHA1,
      3,
      'ok:{a}:fw',
      'ok:{a}:fw',
      'ok:{a}:fw',
      `@${now}`,
      spec,
      't3',
      't9',
      'v1,0',
    )) as number[];
    // window start floor(now / 60000) * 60000; take 3 of 5, then 2 (what is left), then a reserve of 1 that would
    // start in the next window, beyond maxWaitMs 0.
    const windowEnd = Math.floor(now / 60_000) * 60_000 + 60_000;
    expect(reply).toEqual([0, 1, 2, windowEnd, now, 3, 1, 0, windowEnd, now, 2, 0, 0, windowEnd, windowEnd, windowEnd]);
  });
});
