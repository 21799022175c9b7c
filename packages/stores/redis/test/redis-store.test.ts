import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { Redis } from 'ioredis';
import { createLimiter, fixedWindow, gcra, isSluiceError, slidingWindowLog, tokenBucket } from '@sluice/core';
import type { ResolvedRule } from '@sluice/core/store';
import { redisStore, type RedisStoreOptions } from '../src/index.js';
import { CLIENT_CLOCK_EXPIRY_SLACK_MS, LIMIT_FUNCTION, LIMIT_LIBRARY, LIMIT_SCRIPT_SHA1 } from '@sluice/redis-script';
import { startRedis, type RedisServer } from '../../../../test/harness/redis.js';

let server: RedisServer;
const clients: Redis[] = [];

function connect(options: { enableAutoPipelining?: boolean; keyPrefix?: string } = {}): Redis {
  const client = new Redis({ host: server.host, port: server.port, ...options });
  clients.push(client);
  return client;
}

async function commandCalls(client: Redis): Promise<Record<string, number>> {
  const info = await client.info('commandstats');
  const calls: Record<string, number> = {};
  for (const match of info.matchAll(/cmdstat_([\w|]+):calls=(\d+),.*?rejected_calls=(\d+),failed_calls=(\d+)/g)) {
    calls[match[1]!] = Number(match[2]);
    calls[`${match[1]}_rejected`] = Number(match[3]);
    calls[`${match[1]}_failed`] = Number(match[4]);
  }
  return calls;
}

beforeAll(async () => {
  server = await startRedis();
});

afterAll(async () => {
  for (const client of clients) client.disconnect();
  await server?.stop();
});

describe('redisStore options', () => {
  test('a client that is not ioredis is refused, naming what is accepted', () => {
    expect(() => redisStore({} as never)).toThrow(/client must be an ioredis Redis or Cluster/);
  });

  test('unknown options and bad clock values are SluiceErrors with stable codes', () => {
    const client = connect();
    let caught: unknown;
    try {
      redisStore(client, { clok: 'client' } as never);
    } catch (error) {
      caught = error;
    }
    expect(isSluiceError(caught) && caught.code).toBe('UNKNOWN_OPTION');
    expect(() => redisStore(client, { clock: 'server' as never })).toThrow(/clock must be 'store' or 'client', got "server"/);
  });

  test('batch and maxBatch are checked, naming the accepted values', () => {
    const client = connect();
    expect(() => redisStore(client, { batch: 'yes' as never })).toThrow(/batch must be true or false, got "yes"/);
    for (const maxBatch of [0, 1001, 2.5, Number.NaN]) {
      expect(() => redisStore(client, { maxBatch })).toThrow(/maxBatch must be an integer from 1 to 1000/);
    }
    expect(() => redisStore(client, { batch: false, maxBatch: 1 })).not.toThrow();
    expect(() => redisStore(client, { functions: 'no' as never })).toThrow(/functions must be true or false, got "no"/);
  });

  test('capabilities announce the clock in use and every operation (take and reserve run in the script)', () => {
    const client = connect();
    expect(redisStore(client).capabilities).toEqual({
      synchronous: false,
      clock: 'store',
      operations: ['limit', 'reset', 'take', 'reserve', 'lease'],
    });
    expect(redisStore(client, { clock: 'client' }).capabilities.clock).toBe('client');
  });
});

describe('redisStore on a real redis-server', () => {
  test('store clock: decisions carry Redis TIME in epoch ms', async () => {
    const client = connect();
    const limiter = createLimiter({ store: redisStore(client), rules: tokenBucket({ capacity: 2, refillRate: 1 }), clock: () => 0 });
    const before = Date.now();
    const decision = await limiter.limit('time');
    expect(decision.now).toBeGreaterThanOrEqual(before - 5);
    expect(decision.now).toBeLessThanOrEqual(Date.now() + 5);
  });
});

// Every behaviour below holds for both ways of running the script; `call` is the command that carries decisions.
describe.each([
  { how: 'as a Redis Function (FCALL, the default)', functions: true, call: 'fcall' },
  { how: 'as a script (EVALSHA)', functions: false, call: 'evalsha' },
])('redisStore $how', ({ functions, call }) => {
  const store = (client: Redis, options: RedisStoreOptions = {}) => redisStore(client, { functions, ...options });

  for (const enableAutoPipelining of [false, true]) {
    test(`concurrent decisions share one call, compound rules included, each answered in issue order (autopipelining ${enableAutoPipelining ? 'on' : 'off'})`, async () => {
      const client = connect({ enableAutoPipelining });
      const rules = [
        tokenBucket({ capacity: 5, refillRate: 1 }),
        fixedWindow({ limit: 3, window: '1m' }),
        gcra({ limit: 10, period: '1s' }),
      ];
      const limiter = createLimiter({
        store: store(client, { clock: 'client' }),
        rules,
        name: `pipe-${call}-${enableAutoPipelining}`,
        clock: () => 1_700_000_000_000,
      });
      await limiter.limit('warm'); // loads the script or function if needed
      await client.config('RESETSTAT');
      // Eight: the most a tick's first call carries after a quiet tick (calls grow with the waves; batcher.test.ts).
      const decisions = await Promise.all(Array.from({ length: 8 }, () => limiter.limit('one')));
      const calls = await commandCalls(client);
      expect(calls[call]).toBe(1);
      expect((calls.eval ?? 0) + (calls['function|load'] ?? 0)).toBe(0);
      expect(calls.time ?? 0).toBe(0); // client clock
      expect(calls.mget).toBe(1);
      expect(calls.set).toBe(3); // each key written once, with its last state
      // The fixed window's 3 bind, and the first three issued are the ones admitted.
      expect(decisions.map((d) => d.allowed)).toEqual([true, true, true, false, false, false, false, false]);
      expect(decisions.map((d) => d.remaining)).toEqual([2, 1, 0, 0, 0, 0, 0, 0]);
      expect(decisions.filter((d) => !d.allowed).every((d) => d.rule === 'fw:60000')).toBe(true);
    });

    test(`batch: false sends exactly one call per decision (autopipelining ${enableAutoPipelining ? 'on' : 'off'})`, async () => {
      const client = connect({ enableAutoPipelining });
      const rules = [tokenBucket({ capacity: 5, refillRate: 1 }), fixedWindow({ limit: 3, window: '1m' })];
      const limiter = createLimiter({ store: store(client, { batch: false }), rules, name: `single-${call}-${enableAutoPipelining}` });
      await limiter.limit('warm');
      await client.config('RESETSTAT');
      const decisions = await Promise.all(Array.from({ length: 10 }, () => limiter.limit('one')));
      const calls = await commandCalls(client);
      expect(calls[call]).toBe(10);
      expect(calls.time).toBe(10);
      expect(decisions.filter((d) => d.allowed)).toHaveLength(3);
    });
  }

  test('maxBatch bounds the decisions of one call; the store clock is read once per call', async () => {
    const client = connect();
    const limiter = createLimiter({
      store: store(client, { maxBatch: 4 }),
      rules: fixedWindow({ limit: 100, window: '1m' }),
      name: `max-${call}`,
    });
    await limiter.limit('warm');
    await client.config('RESETSTAT');
    const decisions = await Promise.all(Array.from({ length: 10 }, (_, i) => limiter.limit(`id-${i % 3}`)));
    const calls = await commandCalls(client);
    expect(calls[call]).toBe(3); // 4 + 4 + 2
    expect(calls.time).toBe(3);
    expect(decisions.every((d) => d.allowed && !d.degraded)).toBe(true);
    expect(decisions.map((d) => d.remaining)).toEqual([99, 99, 99, 98, 98, 98, 97, 97, 97, 96]);
  });

  test('peek, refund and consume of one identity in one call run in issue order', async () => {
    const client = connect();
    const limiter = createLimiter({
      store: store(client, { clock: 'client' }),
      rules: fixedWindow({ limit: 3, window: '1h' }),
      name: `order-${call}`,
      clock: () => 1_700_000_000_000,
    });
    await limiter.limit('warm');
    await client.config('RESETSTAT');
    const [a, b, c, d, e, f] = await Promise.all([
      limiter.limit('o', { cost: 3 }),
      limiter.peek('o'),
      limiter.limit('o'),
      limiter.refund('o', { cost: 2 }),
      limiter.limit('o'),
      limiter.limit('o', { cost: 0 }),
    ]);
    expect((await commandCalls(client))[call]).toBe(1);
    expect([a, b, c, d, e, f].map((x) => [x.allowed, x.remaining])).toEqual([
      [true, 0],
      [false, 0],
      [false, 0],
      [true, 2],
      [true, 1],
      [true, 1],
    ]);
    expect(await client.get(`sluice:order-${call}:{o}:fw:3600000`)).toMatch(/^\d+,2$/);
  });

  test('take and reserve on the store clock: one call, one TIME; granted, and starts counted from that TIME; bookings queue in issue order', async () => {
    const client = connect();
    const limiter = createLimiter({ store: store(client), rules: tokenBucket({ capacity: 2, refillRate: 1 }), name: `operations-${call}` });
    await limiter.limit('warm');
    await client.config('RESETSTAT');
    const [take, first, second, tooFar, never] = await Promise.all([
      limiter.take('q', { cost: 5 }),
      limiter.reserve('q', { maxWait: 5_000 }),
      limiter.reserve('q', { maxWait: 5_000 }),
      limiter.reserve('q', { maxWait: 500 }),
      limiter.reserve('q', { cost: 3, maxWait: 60_000 }),
    ]);
    const calls = await commandCalls(client);
    expect(calls[call]).toBe(1);
    expect(calls.time).toBe(1);
    const now = take.now;
    expect([first, second, tooFar, never].every((d) => d.now === now)).toBe(true);
    expect([take.allowed, take.granted, take.remaining]).toEqual([true, 2, 0]);
    // 1 token per second: the bookings start 1 s and 2 s after the call's TIME; a third would start at 3 s.
    expect([first.allowed, first.startAt! - now]).toEqual([true, 1_000]);
    expect([second.allowed, second.startAt! - now]).toEqual([true, 2_000]);
    expect([tooFar.allowed, tooFar.startAt! - now]).toEqual([false, 3_000]);
    expect([never.allowed, never.startAt, never.reason]).toEqual([false, -1, 'cost_exceeds_limit']);
    // The booking moved the state to its start: the key lives past it (the step's ttl counted from the start).
    expect(await client.pttl(`sluice:operations-${call}:{q}:tb`)).toBeGreaterThan(2_000);
  });

  test('a failing call fails each of its decisions, is never retried, writes nothing; the policy answers each', async () => {
    const client = connect();
    const rules = fixedWindow({ limit: 10, window: '1h' });
    const deny = createLimiter({
      store: store(client, { clock: 'client' }),
      rules,
      name: `oom-${call}`,
      onStoreError: 'deny',
      circuitBreaker: false,
      clock: () => 1_700_000_000_000,
    });
    await deny.limit('warm');
    await client.config('RESETSTAT');
    // With maxmemory 1 byte and noeviction, Redis refuses scripts that may write: a real error from the server.
    await client.config('SET', 'maxmemory-policy', 'noeviction');
    await client.config('SET', 'maxmemory', '1');
    let decisions;
    try {
      decisions = await Promise.all(Array.from({ length: 5 }, (_, i) => deny.limit(`oom-${i % 2}`)));
    } finally {
      await client.config('SET', 'maxmemory', '0');
    }
    const calls = await commandCalls(client);
    expect(calls[call]! + calls[`${call}_rejected`]!).toBe(1);
    expect((calls.eval ?? 0) + (calls.evalsha ?? 0) + (calls.fcall ?? 0) + (calls['function|load'] ?? 0)).toBe(calls[call]);
    for (const decision of decisions) {
      expect(decision).toMatchObject({ allowed: false, degraded: true, reason: 'store_unavailable' });
      expect(isSluiceError(decision.error) && decision.error.message).toMatch(/OOM/);
    }
    expect(await client.exists(`sluice:oom-${call}:{oom-0}:fw:3600000`, `sluice:oom-${call}:{oom-1}:fw:3600000`)).toBe(0);
  });

  test('a request the script cannot run fails alone, before anything is sent; its neighbours are decided', async () => {
    const client = connect();
    const s = store(client, { clock: 'client' });
    const good = tokenBucket({ capacity: 1, refillRate: 1 });
    await s.limit({ key: 'warm:{w}', rules: [good], cost: 1, operation: 'consume', now: 1 });
    await client.config('RESETSTAT');
    const bogus = { id: 'x', algorithm: 'nope', params: {}, limit: 1 } as unknown as ResolvedRule;
    const bad = { ...tokenBucket({ capacity: 1, refillRate: 1 }) };
    (bad as { params: unknown }).params = { capacity: 'x', refillRate: 1, intervalMs: 1000, refill: 0 };
    const request = (rules: ResolvedRule[], cost = 1) =>
      s.limit({ key: `err:{${call}}`, rules, cost, operation: 'consume', now: 1_700_000_000_000 });
    const [first, unknown, corrupt, badCost, last] = await Promise.allSettled([
      request([good]),
      request([bogus]),
      request([bad]),
      request([good], 1.5),
      request([good]),
    ]);
    expect(unknown).toMatchObject({
      status: 'rejected',
      reason: { code: 'INVALID_OPTION', message: expect.stringMatching(/unknown algorithm "nope"/) },
    });
    expect(corrupt).toMatchObject({
      status: 'rejected',
      reason: { code: 'INVALID_OPTION', message: expect.stringMatching(/capacity must be a non-negative safe integer, got x/) },
    });
    expect(badCost).toMatchObject({ status: 'rejected', reason: { code: 'INVALID_COST' } });
    expect(first.status === 'fulfilled' && first.value.outcomes[0]!.allowed).toBe(true);
    expect(last.status === 'fulfilled' && last.value.outcomes[0]!.allowed).toBe(false); // after `first`, in the same call
    const calls = await commandCalls(client);
    expect(calls[call]).toBe(1);
    expect(calls.eval ?? 0).toBe(0);
  });
});

describe('redisStore as a script (EVALSHA)', () => {
  test('NOSCRIPT: loaded and retried exactly once, never counted twice', async () => {
    const client = connect();
    const limiter = createLimiter({
      store: redisStore(client, { clock: 'client', functions: false }),
      rules: fixedWindow({ limit: 5, window: '1h' }),
      name: 'noscript',
      clock: () => 1_700_000_000_000,
    });
    await client.script('FLUSH');
    await client.config('RESETSTAT');
    const decision = await limiter.limit('a');
    const calls = await commandCalls(client);
    expect(calls.evalsha).toBe(1);
    expect(calls.evalsha_failed).toBe(1);
    expect(calls.eval).toBe(1);
    expect(decision.remaining).toBe(4);
    await limiter.limit('a');
    expect((await commandCalls(client)).evalsha).toBe(2); // loaded now: no EVAL again
  });

  test('NOSCRIPT for a batch: one EVAL for the whole call, every decision counted once', async () => {
    const client = connect();
    const limiter = createLimiter({
      store: redisStore(client, { clock: 'client', functions: false }),
      rules: fixedWindow({ limit: 50, window: '1h' }),
      name: 'noscript-batch',
      clock: () => 1_700_000_000_000,
    });
    await client.script('FLUSH');
    await client.config('RESETSTAT');
    const decisions = await Promise.all(Array.from({ length: 8 }, () => limiter.limit('b')));
    const calls = await commandCalls(client);
    expect([calls.evalsha, calls.evalsha_failed, calls.eval]).toEqual([1, 1, 1]);
    expect(decisions.map((d) => d.remaining)).toEqual([49, 48, 47, 46, 45, 44, 43, 42]);
  });
});

describe('redisStore as a Redis Function (FCALL)', () => {
  test('LIMIT_LIBRARY defines LIMIT_FUNCTION, versioned by the script digest', () => {
    expect(LIMIT_LIBRARY.startsWith(`#!lua name=sluice_${LIMIT_SCRIPT_SHA1.slice(0, 12)}\n`)).toBe(true);
    expect(LIMIT_FUNCTION).toBe(`sluice_limit_${LIMIT_SCRIPT_SHA1.slice(0, 12)}`);
    // The function it registers is the library's `limit`, under its shipped (shortened) local name.
    expect(LIMIT_LIBRARY).toMatch(new RegExp(`\\nredis\\.register_function\\('${LIMIT_FUNCTION}',[A-Za-z_][A-Za-z0-9_]*\\)\\n$`));
  });

  test('a missing function (fresh, restarted or flushed server) is loaded once and the call retried once, never counted twice', async () => {
    const client = connect();
    const limiter = createLimiter({
      store: redisStore(client, { clock: 'client', maxBatch: 3 }),
      rules: fixedWindow({ limit: 50, window: '1h' }),
      name: 'fn-missing',
      clock: () => 1_700_000_000_000,
    });
    await limiter.limit('warm');
    await client.function('FLUSH');
    await client.config('RESETSTAT');
    // Three calls of three decisions find the function missing together: one FUNCTION LOAD serves them all.
    const decisions = await Promise.all(Array.from({ length: 9 }, () => limiter.limit('m')));
    const calls = await commandCalls(client);
    expect([calls.fcall, calls.fcall_failed, calls['function|load']]).toEqual([6, 3, 1]);
    expect(calls.evalsha ?? 0).toBe(0);
    expect(decisions.map((d) => d.remaining)).toEqual([49, 48, 47, 46, 45, 44, 43, 42, 41]);
    await limiter.limit('m');
    expect((await commandCalls(client)).fcall).toBe(7);
  });

  test('regression: a call that fails half-way leaves nothing behind for the next call (the Function reuses its tables)', async () => {
    const client = connect();
    await client.function('LOAD', 'REPLACE', LIMIT_LIBRARY);
    const key = 'dirty:{d}:fw';
    // The second decision is malformed: the call answers an error after the first was stepped, and writes nothing.
    await expect(client.fcall(LIMIT_FUNCTION, 2, key, key, '@1700000000000', '#fw 5 1000000 0', '1', 'x1')).rejects.toThrow(
      /malformed decision x1/,
    );
    expect(await client.get(key)).toBeNull();
    const reply = (await client.fcall(LIMIT_FUNCTION, 1, key, '@1700000000000', '#fw 5 1000000 0', 'p1')) as number[];
    expect(reply.slice(1, 3)).toEqual([1, 5]); // allowed, 5 remaining: the failed call's step is forgotten
  });

  test('an ACL without FCALL and FUNCTION: the store falls back to EVALSHA for good, without losing a decision', async () => {
    const admin = connect();
    await admin.acl('SETUSER', 'nofunctions', 'on', 'nopass', '~*', '+@all', '-fcall', '-function');
    const client = new Redis({ host: server.host, port: server.port, username: 'nofunctions' });
    clients.push(client);
    const limiter = createLimiter({
      store: redisStore(client, { clock: 'client' }),
      rules: fixedWindow({ limit: 5, window: '1h' }),
      name: 'acl',
      clock: () => 1_700_000_000_000,
    });
    await admin.config('RESETSTAT');
    expect((await limiter.limit('a')).remaining).toBe(4);
    expect((await limiter.limit('a')).remaining).toBe(3);
    const calls = await commandCalls(admin);
    expect(calls.fcall_rejected).toBe(1); // tried once, refused, never again
    expect(calls.evalsha).toBe(2);
  });

  test('on a server without Functions (unknown command), EVALSHA for good', async () => {
    const client = connect();
    // Redis before 7 answers FCALL with "unknown command"; so does a server that renamed the command away.
    const fake = Object.assign(Object.create(client) as Redis, {
      sendCommand: (command: { name: string }) =>
        command.name === 'fcall'
          ? Promise.reject(new Error("ERR unknown command 'fcall', with args beginning with: "))
          : client.sendCommand(command as never),
    });
    const limiter = createLimiter({
      store: redisStore(fake, { clock: 'client' }),
      rules: fixedWindow({ limit: 5, window: '1h' }),
      name: 'old-redis',
      clock: () => 1_700_000_000_000,
    });
    await client.config('RESETSTAT');
    expect((await limiter.limit('a')).remaining).toBe(4);
    expect((await limiter.limit('a')).remaining).toBe(3);
    expect((await commandCalls(client)).evalsha).toBe(2);
  });
});

describe('redisStore, either way', () => {
  test('every key gets an expiry in the same script; state that is already spent is deleted', async () => {
    const client = connect();
    const rules = [
      slidingWindowLog({ limit: 3, window: '10s' }),
      fixedWindow({ limit: 3, window: '1m' }),
      tokenBucket({ capacity: 3, refillRate: 1 }),
    ];
    const limiter = createLimiter({ store: redisStore(client), rules, name: 'ttl' });
    await limiter.limit('k', { cost: 2 });
    const keys = await client.keys('sluice:ttl:{k}:*');
    expect(keys.sort()).toEqual(['sluice:ttl:{k}:fw:60000', 'sluice:ttl:{k}:swl:10000', 'sluice:ttl:{k}:tb']);
    for (const key of keys) {
      const pttl = await client.pttl(key);
      expect(pttl).toBeGreaterThan(0);
      expect(pttl).toBeLessThanOrEqual(60_000);
    }
    await limiter.refund('k', { cost: 2 }); // everything back to full: nothing worth keeping
    expect(await client.exists('sluice:ttl:{k}:swl:10000', 'sluice:ttl:{k}:fw:60000', 'sluice:ttl:{k}:tb')).toBe(0);
  });

  test('expiry: exactly ttlMs on Redis TIME; ttlMs plus the slack on the client clock', async () => {
    const client = connect();
    const rule = fixedWindow({ limit: 5, window: '10s' });
    const store = redisStore(client);
    const result = await store.limit({ key: 'exp:{s}', rules: [rule], cost: 1, operation: 'consume', now: 0 });
    const expected = result.outcomes[0]!.resetAt - result.now;
    const pttl = await client.pttl('exp:{s}:fw:10000');
    expect(pttl).toBeGreaterThanOrEqual(expected - 20);
    expect(pttl).toBeLessThanOrEqual(expected);

    const now = 1_700_000_003_000; // 7 s before its window ends
    await redisStore(client, { clock: 'client' }).limit({ key: 'exp:{c}', rules: [rule], cost: 1, operation: 'consume', now });
    const clientPttl = await client.pttl('exp:{c}:fw:10000');
    expect(clientPttl).toBeGreaterThan(7_000 + CLIENT_CLOCK_EXPIRY_SLACK_MS - 20);
    expect(clientPttl).toBeLessThanOrEqual(7_000 + CLIENT_CLOCK_EXPIRY_SLACK_MS);
  });

  test('regression: a frozen client clock keeps state across real milliseconds (1 ms ttl)', async () => {
    const client = connect();
    const limiter = createLimiter({
      store: redisStore(client, { clock: 'client' }),
      rules: gcra({ limit: 3, period: 1 }),
      name: 'frozen',
      clock: () => 1_893_456_000_000,
    });
    expect((await limiter.limit('a', { cost: 3 })).allowed).toBe(true);
    await new Promise((r) => setTimeout(r, 5));
    expect((await limiter.limit('a')).allowed).toBe(false);
  });

  for (const enableAutoPipelining of [false, true]) {
    test(`the client's keyPrefix applies to every key, reset included (autopipelining ${enableAutoPipelining ? 'on' : 'off'})`, async () => {
      const client = connect({ enableAutoPipelining, keyPrefix: `app${enableAutoPipelining}:` });
      const plain = connect();
      for (const functions of [true, false]) {
        const limiter = createLimiter({
          store: redisStore(client, { functions }),
          rules: [fixedWindow({ limit: 2, window: '1m' }), gcra({ limit: 2, period: '1m' })],
          name: `prefix-${functions}`,
        });
        await Promise.all([limiter.limit('p'), limiter.limit('p')]);
        expect((await limiter.limit('p')).allowed).toBe(false);
        expect((await plain.keys(`app${enableAutoPipelining}:sluice:prefix-${functions}:{p}:*`)).sort()).toEqual([
          `app${enableAutoPipelining}:sluice:prefix-${functions}:{p}:fw:60000`,
          `app${enableAutoPipelining}:sluice:prefix-${functions}:{p}:gcra:60000`,
        ]);
        expect(await plain.keys(`sluice:prefix-${functions}:*`)).toEqual([]);
        await limiter.reset('p');
        expect(await plain.keys(`app${enableAutoPipelining}:sluice:prefix-${functions}:*`)).toEqual([]);
      }
    });
  }

  test('a key of another type under the limiter’s prefix reads as no state and is replaced by the state, with an expiry', async () => {
    const client = connect();
    for (const functions of [true, false]) {
      const limiter = createLimiter({
        store: redisStore(client, { functions }),
        rules: fixedWindow({ limit: 3, window: '1m' }),
        name: `wrongtype-${functions}`,
      });
      const writers: Record<string, (key: string) => Promise<unknown>> = {
        hash: (key) => client.hset(key, 'f', '1,2'),
        list: (key) => client.rpush(key, '1,2'),
        set: (key) => client.sadd(key, '1,2'),
        zset: (key) => client.zadd(key, 1, '1,2'),
      };
      for (const [type, write] of Object.entries(writers)) {
        const key = `sluice:wrongtype-${functions}:{${type}}:fw:60000`;
        await write(key);
        expect(await client.type(key)).toBe(type);
        const decision = await limiter.limit(type);
        expect(decision.allowed, `${type}, functions ${functions}`).toBe(true);
        expect(decision.remaining, `${type}, functions ${functions}`).toBe(2); // no state: a fresh window
        expect(await client.type(key)).toBe('string');
        expect(await client.pttl(key)).toBeGreaterThan(0);
        expect((await limiter.limit(type)).remaining).toBe(1); // the replaced state is the one read next
      }
    }
  });

  test('reset deletes the identity’s keys in one command', async () => {
    const client = connect();
    const limiter = createLimiter({
      store: redisStore(client),
      rules: [fixedWindow({ limit: 1, window: '1m' }), gcra({ limit: 1, period: '1m' })],
      name: 'reset',
    });
    expect((await limiter.limit('r')).allowed).toBe(true);
    expect((await limiter.limit('r')).allowed).toBe(false);
    await limiter.reset('r');
    expect(await client.keys('sluice:reset:*')).toEqual([]);
    expect((await limiter.limit('r')).allowed).toBe(true);
  });
});
