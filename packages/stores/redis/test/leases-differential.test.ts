/**
 * JS-vs-Lua differential for concurrency leases: fast-check sequences of acquire / release / extend with random
 * ids, limits and ttls, run through the lease script (LEASE_SCRIPT, with the stores' own codec `leaseCall` and
 * `parseLeaseReply`) on a real redis-server, and through core's `evaluateLease()` (the reference) on the time each
 * call reports. Every call must agree exactly: the result (now, ok, held, expiresAt), the sorted set left behind
 * and its expiry.
 *
 * Each call is one MULTI/EXEC: ZRANGE the record, TIME, EVALSHA, TIME, ZRANGE and PEXPIRETIME it again, TIME. The
 * reference steps the record the script saw (read in the same atomic block) at the `now` the script reports;
 * a JS model chaining the reference's own writes checks, in addition, that Redis lost no live lease between calls.
 * Both clocks: Redis TIME (short ttls and real sleeps, so that leases really expire between calls) and the
 * client's (a logical clock that jumps, so expiry is exercised at any scale).
 */
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import fc from 'fast-check';
import { Redis } from 'ioredis';
import { SluiceError } from '@sluice/core';
import { evaluateLease, type LeaseEntries, type LeaseOp, type LeaseRequest } from '@sluice/core/store';
import { redisStore } from '../src/index.js';
import {
  CLIENT_CLOCK_EXPIRY_SLACK_MS,
  LEASE_SCRIPT,
  LEASE_SCRIPT_SHA1,
  leaseCall,
  parseLeaseReplies,
  parseLeaseReply,
} from '@sluice/redis-script';
import { startRedis, type RedisServer } from '../../../../test/harness/redis.js';

let server: RedisServer;
let client: Redis;
let sequence = 0;
const stats = {
  sequences: 0,
  calls: 0,
  ops: { acquire: 0, release: 0, extend: 0 },
  granted: 0,
  renewed: 0,
  refused: 0,
  released: 0,
  extended: 0,
  expiredBetweenCalls: 0,
  expiredBeforeRead: 0,
  deleted: 0,
};

beforeAll(async () => {
  server = await startRedis();
  client = new Redis({ host: server.host, port: server.port, lazyConnect: true });
  await client.connect();
  expect(await client.script('LOAD', LEASE_SCRIPT)).toBe(LEASE_SCRIPT_SHA1);
});

afterAll(async () => {
  console.log(
    `[leases differential] ${stats.sequences} sequences, ${stats.calls} script calls (${JSON.stringify(stats.ops)}): ` +
      `${stats.granted} acquires granted (${stats.renewed} renewals), ${stats.refused} refused, ${stats.released} releases freed a lease, ` +
      `${stats.extended} extends, ${stats.expiredBetweenCalls} leases expired between calls, ${stats.deleted} records deleted ` +
      `(${stats.expiredBeforeRead} more expired in real time before the check read them back)`,
  );
  client?.disconnect();
  await server?.stop();
});

interface Step {
  readonly op: LeaseOp;
  /** Index into the sequence's ids. */
  readonly who: number;
  readonly limit: number;
  readonly ttlMs: number;
  /** Store clock: real ms slept before the call. Client clock: ms the logical clock moves. */
  readonly waitMs: number;
}

const idArb = fc.stringMatching(/^[A-Za-z0-9_-]{1,64}$/);
const opArb = fc.oneof(
  { arbitrary: fc.constant<LeaseOp>('acquire'), weight: 3 },
  { arbitrary: fc.constant<LeaseOp>('release'), weight: 1 },
  { arbitrary: fc.constant<LeaseOp>('extend'), weight: 1 },
);

function steps(ttl: fc.Arbitrary<number>, wait: fc.Arbitrary<number>, maxLength: number): fc.Arbitrary<Step[]> {
  return fc.array(fc.record({ op: opArb, who: fc.nat(7), limit: fc.integer({ min: 1, max: 4 }), ttlMs: ttl, waitMs: wait }), {
    minLength: 1,
    maxLength,
  });
}

const idsArb = fc.uniqueArray(idArb, { minLength: 1, maxLength: 6 });

/** Redis's clock in ms as Redis keeps it (floor of microseconds / 1000). */
const redisMs = (time: unknown) => Number((time as string[])[0]) * 1000 + Math.floor(Number((time as string[])[1]) / 1000);

/** A ZRANGE ... WITHSCORES reply as entries, by id. */
function entriesOf(reply: unknown): Array<[string, number]> {
  const flat = reply as string[];
  const out: Array<[string, number]> = [];
  for (let i = 0; i < flat.length; i += 2) out.push([flat[i]!, Number(flat[i + 1])]);
  return byId(out);
}

const byId = (entries: LeaseEntries): Array<[string, number]> =>
  entries.map(([id, e]) => [id, e] as [string, number]).sort((a, b) => (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0));
const live = (entries: LeaseEntries, now: number) => byId(entries.filter(([, e]) => e > now));

async function runSequence(clock: 'store' | 'client', ids: readonly string[], list: readonly Step[], start = 0): Promise<void> {
  stats.sequences++;
  const key = `ldiff:{s${++sequence}}`;
  const leaseKey = `${key}:lease`;
  let model: LeaseEntries = [];
  let logical = start;
  for (const [index, step] of list.entries()) {
    if (clock === 'store') {
      if (step.waitMs > 0) await new Promise((resolve) => setTimeout(resolve, step.waitMs));
    } else {
      logical += step.waitMs;
    }
    const request: LeaseRequest = { key, op: step.op, id: ids[step.who % ids.length]!, limit: step.limit, ttlMs: step.ttlMs, now: logical };
    const { keys, args } = leaseCall(request, clock, 'differential');
    expect(keys).toEqual([leaseKey]);
    const results = (await client
      .multi()
      .zrange(leaseKey, 0, -1, 'WITHSCORES')
      .time()
      .evalsha(LEASE_SCRIPT_SHA1, 1, leaseKey, ...args)
      .time()
      .zrange(leaseKey, 0, -1, 'WITHSCORES')
      .call('PEXPIRETIME', leaseKey)
      .time()
      .exec())!;
    for (const [error] of results) expect(error).toBeNull();
    const [before, timeBefore, reply, timeAfter, after, expireAt, timeRead] = results.map(([, value]) => value);
    const [t0, t1, t2] = [redisMs(timeBefore), redisMs(timeAfter), redisMs(timeRead)];
    const actual = parseLeaseReply(reply);
    const seen = entriesOf(before);
    const where = `call ${index} ${JSON.stringify(request)} (Redis time ${t0}..${t1}), record before ${JSON.stringify(seen)}`;
    stats.calls++;
    stats.ops[request.op]++;

    if (clock === 'store') {
      expect(actual.now, where).toBeGreaterThanOrEqual(t0);
      expect(actual.now, where).toBeLessThanOrEqual(t1);
    } else {
      expect(actual.now, where).toBe(request.now);
    }
    // Redis lost no live lease since the last call (what the reference wrote, still live now, is what Redis holds).
    expect(live(seen, actual.now), `${where}: live leases held`).toEqual(live(model, actual.now));
    stats.expiredBetweenCalls += model.length - live(model, actual.now).length;

    const expected = evaluateLease(seen, request, actual.now);
    expect(actual, where).toEqual(expected.result);
    const latest = actual.now + expected.ttlMs;
    if (clock === 'store' && expected.entries.length > 0 && entriesOf(after).length === 0 && latest <= t2) {
      // Every lease it held expired in real time before the record was read back (Redis TIME moved past its
      // latest expiry within the block): the key expired with them, as it should.
      expect(expireAt, `${where}: the expired record is gone`).toBe(-2);
      stats.expiredBeforeRead++;
    } else if (expected.entries.length === 0) {
      expect(entriesOf(after), `${where}: the record after`).toEqual([]);
      expect(expireAt, `${where}: an empty record is deleted`).toBe(-2);
      stats.deleted++;
    } else if (clock === 'store') {
      expect(entriesOf(after), `${where}: the record after`).toEqual(byId(expected.entries));
      // The record expires exactly with its latest lease, on the clock the script read.
      expect(expireAt, `${where}: PEXPIRETIME`).toBe(latest);
    } else {
      expect(entriesOf(after), `${where}: the record after`).toEqual(byId(expected.entries));
      // From Redis's own clock at the PEXPIRE (between the two TIME readings), plus the client-clock slack.
      expect(expireAt as number, `${where}: PEXPIRETIME`).toBeGreaterThanOrEqual(t0 + expected.ttlMs + CLIENT_CLOCK_EXPIRY_SLACK_MS);
      expect(expireAt as number, `${where}: PEXPIRETIME`).toBeLessThanOrEqual(t1 + expected.ttlMs + CLIENT_CLOCK_EXPIRY_SLACK_MS);
    }
    if (actual.ok) {
      if (request.op === 'acquire') {
        stats.granted++;
        if (seen.some(([id, e]) => id === request.id && e > actual.now)) stats.renewed++;
      } else if (request.op === 'release') stats.released++;
      else stats.extended++;
    } else if (request.op === 'acquire') stats.refused++;
    model = expected.entries;
  }
}

describe('the lease script equals core evaluateLease(), call by call', () => {
  test('on Redis TIME: short ttls and real sleeps, so leases expire between calls', async () => {
    const sleep = fc.oneof({ arbitrary: fc.constant(0), weight: 5 }, { arbitrary: fc.integer({ min: 1, max: 12 }), weight: 1 });
    await fc.assert(
      fc.asyncProperty(idsArb, steps(fc.integer({ min: 1, max: 25 }), sleep, 40), (ids, list) => runSequence('store', ids, list)),
      { numRuns: 200 },
    );
  }, 60_000);

  test("on the client's clock: a logical clock that jumps, ttls up to minutes", async () => {
    const ttl = fc.oneof(fc.integer({ min: 1, max: 50 }), fc.integer({ min: 1, max: 120_000 }));
    const jump = fc.oneof(
      { arbitrary: fc.constant(0), weight: 2 },
      { arbitrary: fc.integer({ min: 1, max: 60 }), weight: 2 },
      { arbitrary: fc.integer({ min: 1, max: 90_000 }), weight: 1 },
    );
    await fc.assert(
      fc.asyncProperty(idsArb, steps(ttl, jump, 60), fc.integer({ min: 0, max: 2 ** 46 }), (ids, list, start) =>
        runSequence('client', ids, list, start),
      ),
      { numRuns: 400 },
    );
  }, 60_000);
});

/**
 * One call of several operations (what redisStore's LeaseBatcher sends for the operations a process issues in one
 * tick): each must equal the reference applied in order, each on what the one before left, on up to three keys.
 */
async function runBatch(
  clock: 'store' | 'client',
  ids: readonly string[],
  list: ReadonlyArray<Step & { on: number }>,
  start: number,
): Promise<void> {
  stats.sequences++;
  const base = ++sequence;
  const keyOf = (on: number) => `ldiff:{b${base}-${on}}`;
  let logical = start;
  const requests = list.map((step): LeaseRequest => {
    logical += step.waitMs;
    return { key: keyOf(step.on), op: step.op, id: ids[step.who % ids.length]!, limit: step.limit, ttlMs: step.ttlMs, now: logical };
  });
  // Some state first, one operation per call, so that the batch meets held, expired and renewed leases.
  for (const request of requests.slice(0, 3)) {
    const { keys, args } = leaseCall({ ...request, op: 'acquire', now: start }, clock, 'differential');
    await client.evalsha(LEASE_SCRIPT_SHA1, 1, ...keys, ...args);
  }
  const used = [...new Set(requests.map((r) => `${r.key}:lease`))];
  const keys: string[] = [];
  const args: string[] = [];
  for (const request of requests) {
    const call = leaseCall(request, clock, 'differential');
    keys.push(...call.keys);
    args.push(...call.args);
  }
  const block = client.multi();
  for (const key of used) block.zrange(key, 0, -1, 'WITHSCORES');
  block
    .time()
    .evalsha(LEASE_SCRIPT_SHA1, keys.length, ...keys, ...args)
    .time();
  for (const key of used) block.zrange(key, 0, -1, 'WITHSCORES').call('PEXPIRETIME', key);
  const results = (await block.exec())!;
  for (const [error] of results) expect(error).toBeNull();
  const values = results.map(([, value]) => value);
  const records = new Map(used.map((key, i) => [key, entriesOf(values[i]) as LeaseEntries]));
  const [t0, reply, t1] = [redisMs(values[used.length]), values[used.length + 1], redisMs(values[used.length + 2])];
  const actual = parseLeaseReplies(reply, requests.length);
  const lastTtl = new Map<string, number>();
  requests.forEach((request, i) => {
    const where = `operation ${i} of ${requests.length} in one call: ${JSON.stringify(request)}`;
    const now = clock === 'store' ? actual[0]!.now : request.now;
    expect(actual[i]!.now, where).toBe(now);
    const key = `${request.key}:lease`;
    const expected = evaluateLease(records.get(key), request, now);
    expect(actual[i], where).toEqual(expected.result);
    records.set(key, expected.entries);
    lastTtl.set(key, expected.ttlMs);
    stats.calls++;
    stats.ops[request.op]++;
  });
  if (clock === 'store') {
    expect(actual[0]!.now).toBeGreaterThanOrEqual(t0);
    expect(actual[0]!.now).toBeLessThanOrEqual(t1);
  }
  used.forEach((key, i) => {
    const [after, expireAt] = [values[used.length + 3 + 2 * i], values[used.length + 4 + 2 * i]];
    const expected = records.get(key)!;
    const latest = Math.max(...expected.map(([, e]) => e));
    if (clock === 'store' && expected.length > 0 && entriesOf(after).length === 0 && latest <= t1) return; // expired in real time
    expect(entriesOf(after), `${key} after the call`).toEqual(byId(expected));
    if (expected.length === 0) expect(expireAt, `${key}: an empty record is gone`).toBe(-2);
    else if (clock === 'store') expect(expireAt, `${key}: PEXPIRETIME is its latest lease`).toBe(latest);
    else {
      expect(expireAt as number, `${key}: PEXPIRETIME`).toBeGreaterThanOrEqual(t0 + lastTtl.get(key)! + CLIENT_CLOCK_EXPIRY_SLACK_MS);
      expect(expireAt as number, `${key}: PEXPIRETIME`).toBeLessThanOrEqual(t1 + lastTtl.get(key)! + CLIENT_CLOCK_EXPIRY_SLACK_MS);
    }
  });
}

describe('one call of several lease operations equals core evaluateLease() applied in order', () => {
  const batchArb = (ttl: fc.Arbitrary<number>, wait: fc.Arbitrary<number>) =>
    fc.array(fc.record({ op: opArb, who: fc.nat(7), limit: fc.integer({ min: 1, max: 4 }), ttlMs: ttl, waitMs: wait, on: fc.nat(2) }), {
      minLength: 2,
      maxLength: 24,
    });

  test('on Redis TIME: one clock reading for the whole call', async () => {
    await fc.assert(
      fc.asyncProperty(idsArb, batchArb(fc.integer({ min: 1, max: 60_000 }), fc.constant(0)), (ids, list) =>
        runBatch('store', ids, list, 0),
      ),
      { numRuns: 150 },
    );
  }, 60_000);

  test("on the client's clock: each operation at its own time (backward steps too), leases expiring within the call", async () => {
    const jump = fc.oneof(fc.constant(0), fc.integer({ min: 1, max: 40 }), fc.integer({ min: -40, max: -1 }));
    await fc.assert(
      fc.asyncProperty(
        idsArb,
        batchArb(fc.integer({ min: 1, max: 100 }), jump),
        fc.integer({ min: 1000, max: 2 ** 46 }),
        (ids, list, start) => runBatch('client', ids, list, start),
      ),
      { numRuns: 150 },
    );
  }, 60_000);

  test('a malformed operation anywhere in the call fails the whole call before any operation runs', async () => {
    const keys = ['raw:{y}:lease', 'raw:{y}:lease'];
    await expect(client.evalsha(LEASE_SCRIPT_SHA1, 2, ...keys, 'acquire', 'a', '1', '1000', 'acquire', 'b c', '1', '1000')).rejects.toThrow(
      /malformed lease id/,
    );
    await expect(client.evalsha(LEASE_SCRIPT_SHA1, 2, ...keys, 'acquire', 'a', '1', '1000', 'acquire', 'b', '1')).rejects.toThrow(
      /4 or 5 arguments per key/,
    );
    expect(await client.exists('raw:{y}:lease')).toBe(0);
  });
});

describe('the lease call through redisStore', () => {
  test('a lease id outside LEASE_ID_PATTERN is refused with INVALID_OPTION before anything is sent', async () => {
    const store = redisStore(client, { clock: 'client' });
    for (const id of ['', 'has space', 'x'.repeat(65), 'ünïcode', 'a:b', 42 as unknown as string]) {
      const error = await store.lease({ key: 'bad:{id}', op: 'acquire', id, limit: 1, ttlMs: 1000, now: 1 }).catch((e: unknown) => e);
      expect(error, JSON.stringify(id)).toBeInstanceOf(SluiceError);
      expect((error as SluiceError).code).toBe('INVALID_OPTION');
      expect((error as SluiceError).message).toMatch(
        /redisStore\.lease: a lease id must be 1 to 64 characters of letters, digits, '_' or '-'/,
      );
    }
    expect(await client.exists('bad:{id}:lease')).toBe(0);
  });

  test('the script itself refuses malformed arguments (a caller that skipped leaseCall)', async () => {
    await expect(client.evalsha(LEASE_SCRIPT_SHA1, 1, 'raw:{x}:lease', 'acquire', 'a b', '1', '1000')).rejects.toThrow(
      /malformed lease id/,
    );
    await expect(client.evalsha(LEASE_SCRIPT_SHA1, 1, 'raw:{x}:lease', 'grab', 'a', '1', '1000')).rejects.toThrow(
      /unknown lease operation/,
    );
    await expect(client.evalsha(LEASE_SCRIPT_SHA1, 1, 'raw:{x}:lease', 'acquire', 'a', '0', '1000')).rejects.toThrow(
      /positive limit and ttl/,
    );
    await expect(client.evalsha(LEASE_SCRIPT_SHA1, 1, 'raw:{x}:lease', 'extend', 'a', '1', '1e3')).rejects.toThrow(
      /malformed lease limit or ttl/,
    );
    await expect(client.evalsha(LEASE_SCRIPT_SHA1, 1, 'raw:{x}:lease', 'acquire', 'a', '1', '1000', '@now')).rejects.toThrow(
      /malformed clock/,
    );
    expect(await client.exists('raw:{x}:lease')).toBe(0);
  });

  test('NOSCRIPT (a flushed or restarted server): one EVAL runs the lease and caches the script', async () => {
    const store = redisStore(client);
    await client.script('FLUSH');
    expect(await client.script('EXISTS', LEASE_SCRIPT_SHA1)).toEqual([0]);
    const first = await store.lease({ key: 'flush:{a}', op: 'acquire', id: 'one', limit: 1, ttlMs: 5000, now: 0 });
    expect(first).toMatchObject({ ok: true, held: 1, expiresAt: first.now + 5000 });
    expect(await client.script('EXISTS', LEASE_SCRIPT_SHA1)).toEqual([1]);
    expect(await store.lease({ key: 'flush:{a}', op: 'acquire', id: 'two', limit: 1, ttlMs: 5000, now: 0 })).toMatchObject({
      ok: false,
      held: 1,
      expiresAt: first.expiresAt,
    });
    expect(await store.lease({ key: 'flush:{a}', op: 'release', id: 'one', limit: 1, ttlMs: 0, now: 0 })).toMatchObject({
      ok: true,
      held: 0,
      expiresAt: -1,
    });
    expect(await client.exists('flush:{a}:lease')).toBe(0);
    await client.script('LOAD', LEASE_SCRIPT);
  });
});
