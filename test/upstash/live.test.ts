/**
 * The Upstash store against a real Upstash database, opt-in: `pnpm test:upstash-live` with UPSTASH_REDIS_REST_URL
 * and UPSTASH_REDIS_REST_TOKEN set runs every check below against that database; otherwise the same checks run
 * against the local fixture (started here, on a redis-server of its own), so the suite keeps working in every
 * normal test run and a live run checks the fixture's claims about Upstash. The script also sets
 * SLUICE_UPSTASH_LIVE=1, required too: an app's own Upstash variables, left in the shell of someone running
 * `pnpm test`, must not point this suite (and its SCRIPT FLUSH) at that app's database.
 *
 * Every request goes through a fetch that records it (command, body bytes, HTTP status), and the suite prints the
 * total at the end: what a live run costs. Its keys share one random prefix and are deleted at the end (SCAN +
 * DEL, counted too). It runs SCRIPT FLUSH twice, which empties the database's whole script cache: harmless (every
 * client falls back to EVAL once) but not nothing, so point it at a test database. Decisions are compared with the
 * Redis store on a redis-server started here, call for call.
 */
import { randomUUID } from 'node:crypto';
import { fixedWindow, gcra, slidingWindowCounter, slidingWindowLog, tokenBucket } from '@sluice/core';
import type { LeaseRequest, LimitRequest } from '@sluice/core/store';
import { redisStore } from '@sluice/redis';
import { encodeCall, isNoScript, runScript } from '@sluice/redis-script';
import {
  UPSTASH_LIMIT_SCRIPT,
  UPSTASH_MAX_REQUEST_BYTES,
  upstashLeaseStore,
  upstashRest,
  upstashStore,
  type UpstashFetchInit,
  type UpstashRestOptions,
} from '@sluice/upstash';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startRedis, type RedisServer } from '../harness/redis.js';
import { startUpstashFixture, type UpstashFixture } from '../harness/upstash-fixture.js';

const CREDENTIALS = Boolean(process.env.UPSTASH_REDIS_REST_URL && process.env.UPSTASH_REDIS_REST_TOKEN);
const LIVE = CREDENTIALS && process.env.SLUICE_UPSTASH_LIVE === '1';
const MODE = LIVE ? 'live Upstash database' : 'local fixture';
const PREFIX = `sluice-live-${randomUUID()}`;
/** How far the store's TIME may be from this machine's clock: the same machine locally, NTP apart live. */
const CLOCK_TOLERANCE_MS = LIVE ? 2_000 : 50;

let database: { url: string; token: string };
let fixtureRedis: RedisServer | undefined;
let fixture: UpstashFixture | undefined;
let redisServer: RedisServer;
let ioredis: Redis;

interface Sent {
  command: string;
  bytes: number;
  status: number | undefined;
  syncToken: string | null;
  answeredToken: string | null;
}
const sent: Sent[] = [];
const utf8 = new TextEncoder();

/** The runtime's fetch, recording every request it sends (a request that fails to answer is recorded too). */
async function recordingFetch(input: string, init: UpstashFetchInit) {
  const entry: Sent = {
    command: String((JSON.parse(init.body) as unknown[])[0]),
    bytes: utf8.encode(init.body).length,
    status: undefined,
    syncToken: init.headers['upstash-sync-token'] ?? null,
    answeredToken: null,
  };
  sent.push(entry);
  const response = await fetch(input, init);
  entry.status = response.status;
  entry.answeredToken = response.headers.get('upstash-sync-token');
  return response;
}

const rest = (options: Partial<UpstashRestOptions> = {}) => upstashRest({ ...database, fetch: recordingFetch, ...options });
/** The commands sent since `from` (an index into `sent`). */
const commandsSince = (from: number) => sent.slice(from).map((s) => s.command);
const key = (name: string) => `${PREFIX}:{${name}}`;

beforeAll(async () => {
  redisServer = await startRedis();
  ioredis = new Redis({ host: redisServer.host, port: redisServer.port });
  if (LIVE) {
    database = { url: process.env.UPSTASH_REDIS_REST_URL!, token: process.env.UPSTASH_REDIS_REST_TOKEN! };
  } else {
    fixtureRedis = await startRedis();
    fixture = await startUpstashFixture({ redisPort: fixtureRedis.port });
    database = { url: fixture.url, token: fixture.token };
  }
  const ignored = CREDENTIALS && !LIVE ? ' (UPSTASH_REDIS_REST_URL and _TOKEN are set: `pnpm test:upstash-live` uses them)' : '';
  console.log(`[upstash-live] against the ${MODE}${ignored}; keys under ${PREFIX}`);
});

afterAll(async () => {
  if (database !== undefined) {
    // Cleanup, counted with the rest: SCAN for the prefix, DEL what it finds.
    const client = rest();
    let cursor = '0';
    let deleted = 0;
    do {
      const [next, keys] = (await client.command(['SCAN', cursor, 'MATCH', `${PREFIX}*`, 'COUNT', 1000])) as [string, string[]];
      if (keys.length > 0) deleted += await client.del(...keys);
      cursor = next;
    } while (cursor !== '0');
    const byCommand: Record<string, number> = {};
    for (const { command } of sent) byCommand[command] = (byCommand[command] ?? 0) + 1;
    const bytes = sent.reduce((sum, s) => sum + s.bytes, 0);
    const forwarded = fixture === undefined ? '' : `; the fixture ran ${fixture.stats.redisCommands} of them as Redis commands`;
    console.log(
      `[upstash-live] ${MODE}: ${sent.length} requests (one command each${forwarded}), ${bytes} bytes sent, ${deleted} keys deleted; by command ${JSON.stringify(byCommand)}`,
    );
    // The cost the package README states for a run, held on the fixture (a live database may add a SCAN per 1,000
    // of its own keys, and a request over 1 MB where its plan accepts one).
    if (!LIVE)
      expect({ requests: sent.length, megabytes: Math.round(bytes / 1e5) / 10, deleted }).toEqual({
        requests: 64,
        megabytes: 4.2,
        deleted: 1693,
      });
  }
  ioredis?.disconnect();
  await fixture?.close();
  await fixtureRedis?.stop();
  await redisServer?.stop();
});

const now = 1_700_000_000_000;
const rules = [
  fixedWindow({ limit: 3, window: '1m', id: 'minute' }),
  tokenBucket({ capacity: 2, refillRate: 1, interval: '10s', id: 'burst' }),
  slidingWindowLog({ limit: 4, window: '30s', id: 'log' }),
  slidingWindowCounter({ limit: 5, window: '1m', id: 'counter' }),
  gcra({ limit: 6, period: '1m', id: 'gcra' }),
];

describe(`the Upstash store on the ${MODE}`, () => {
  it('a flushed script cache costs exactly one NOSCRIPT and one EVAL, then EVALSHA only', async () => {
    const client = rest();
    await client.command(['SCRIPT', 'FLUSH']);
    const from = sent.length;
    const store = upstashStore(client, { clock: 'client' });
    for (let i = 0; i < 4; i++) {
      await store.limit({ key: key('noscript'), rules: [rules[0]!], cost: 1, operation: 'consume', now });
    }
    expect(commandsSince(from)).toEqual(['EVALSHA', 'EVAL', 'EVALSHA', 'EVALSHA', 'EVALSHA']);
    expect(sent.slice(from).map((s) => s.status)).toEqual([400, 200, 200, 200, 200]);
  });

  it('the limit script, flagged allow-key-locking, gives the decisions of the Redis store call for call: compound rules and every operation', async () => {
    const ours = upstashStore(rest(), { clock: 'client', batch: false });
    const theirs = redisStore(ioredis, { clock: 'client', batch: false });
    const steps: Array<Pick<LimitRequest, 'cost' | 'operation'> & { at: number; maxWaitMs?: number }> = [
      { cost: 1, operation: 'consume', at: 0 },
      { cost: 0, operation: 'peek', at: 10 },
      { cost: 1, operation: 'consume', at: 1_000 },
      { cost: 2, operation: 'consume', at: 2_000 },
      { cost: 1, operation: 'refund', at: 3_000 },
      { cost: 3, operation: 'take', at: 4_000 },
      { cost: 1, operation: 'reserve', at: 5_000, maxWaitMs: 60_000 },
      { cost: 1, operation: 'consume', at: 65_000 },
    ];
    for (const { at, ...step } of steps) {
      const request = { key: key('compound'), rules, now: now + at, ...step } as LimitRequest;
      expect(await ours.limit(request)).toEqual(await theirs.limit(request));
    }
  });

  it("on the store's clock (TIME inside the script) a decision's now is the caller's wall clock, and the outcomes match the Redis store's", async () => {
    const ours = upstashStore(rest(), { batch: false });
    const theirs = redisStore(ioredis, { batch: false });
    // A day's window: the two stores' calls, a round trip apart, do not straddle its boundary.
    const day = [fixedWindow({ limit: 3, window: '1d', id: 'day' })];
    for (let i = 0; i < 4; i++) {
      const request: LimitRequest = { key: key('store-clock'), rules: day, cost: 1, operation: 'consume', now: 0 };
      const before = Date.now();
      const decision = await ours.limit(request);
      const after = Date.now();
      expect(decision.now).toBeGreaterThanOrEqual(before - CLOCK_TOLERANCE_MS);
      expect(decision.now).toBeLessThanOrEqual(after + CLOCK_TOLERANCE_MS);
      const reference = await theirs.limit(request);
      expect(decision.outcomes.map((o) => [o.allowed, o.remaining])).toEqual(reference.outcomes.map((o) => [o.allowed, o.remaining]));
    }
  });

  it('the lease script, flagged allow-key-locking, gives the answers of the Redis store call for call', async () => {
    const ours = upstashLeaseStore(rest(), { clock: 'client' });
    const theirs = redisStore(ioredis, { clock: 'client' });
    const base = { key: key('lease'), limit: 2, ttlMs: 10_000 };
    const steps: Array<Omit<LeaseRequest, 'key' | 'limit' | 'ttlMs'>> = [
      { op: 'acquire', id: 'a', now },
      { op: 'acquire', id: 'b', now: now + 1 },
      { op: 'acquire', id: 'c', now: now + 2 },
      { op: 'extend', id: 'a', now: now + 5_000 },
      { op: 'release', id: 'b', now: now + 6_000 },
      { op: 'acquire', id: 'c', now: now + 6_001 },
      { op: 'extend', id: 'b', now: now + 7_000 },
      { op: 'acquire', id: 'd', now: now + 20_000 },
    ];
    for (const step of steps) {
      const request: LeaseRequest = { ...base, ...step };
      expect(await ours.lease(request)).toEqual(await theirs.lease(request));
    }
  });

  it('1,024 identities decided at once: the decisions of the Redis store, in two requests (a call carries at most 1,000)', async () => {
    const ours = upstashStore(rest(), { clock: 'client', maxBatch: 1000 });
    const theirs = redisStore(ioredis, { clock: 'client', maxBatch: 1000 });
    await ours.limit({ key: key('warm'), rules: [rules[1]!], cost: 1, operation: 'consume', now }); // the script is loaded
    const requests = Array.from({ length: 1024 }, (_, i): LimitRequest => ({
      key: key(`batch-${i}`),
      rules: [rules[1]!],
      cost: i % 3,
      operation: 'consume',
      now,
    }));
    const from = sent.length;
    const results = await Promise.all(requests.map((request) => ours.limit(request)));
    expect(commandsSince(from)).toEqual(['EVALSHA', 'EVALSHA']);
    expect(results).toEqual(await Promise.all(requests.map((request) => theirs.limit(request))));
  });

  it("the store's largest request (a batch's EVAL at UPSTASH_MAX_REQUEST_BYTES) is accepted; a body over 1 MB gets ERR max request size exceeded", async (context) => {
    const client = rest();
    await client.command(['SCRIPT', 'FLUSH']); // so that the batch goes as EVAL, the larger form
    const keys = Array.from({ length: 1000 }, (_, i) => key(`big-${i}-${'\u0001'.repeat(100)}`));
    const requests = keys.map((k): LimitRequest => ({ key: k, rules: [rules[0]!], cost: 1, operation: 'consume', now }));
    const callBytes = (count: number) => {
      const { keys: callKeys, args } = encodeCall(requests.slice(0, count), 'client');
      return utf8.encode(JSON.stringify(['EVAL', UPSTASH_LIMIT_SCRIPT, callKeys.length, ...callKeys, ...args])).length;
    };
    // Pad the last key so that the whole batch is exactly at the limit.
    const missing = UPSTASH_MAX_REQUEST_BYTES - callBytes(1000);
    expect(missing).toBeGreaterThanOrEqual(0);
    requests[999] = { ...requests[999]!, key: `${requests[999]!.key}${'x'.repeat(missing)}` };
    expect(callBytes(1000)).toBe(UPSTASH_MAX_REQUEST_BYTES);
    const from = sent.length;
    const store = upstashStore(client, { clock: 'client', maxBatch: 1000 });
    const results = await Promise.all(requests.map((request) => store.limit(request)));
    expect(results.every((r) => r.outcomes[0]!.allowed)).toBe(true);
    expect(commandsSince(from)).toEqual(['EVALSHA', 'EVAL']);
    const largest = Math.max(...sent.slice(from).map((s) => s.bytes));
    expect(largest).toBe(UPSTASH_MAX_REQUEST_BYTES);
    console.log(
      `[upstash-live] largest request the store sent: ${largest} bytes (EVAL of 1,000 decisions), answered ${sent.at(-1)!.status}`,
    );

    // Over the limit: 1 MB + 1 byte of body; a plan with a higher limit accepts it, then 10 MB + 1 is tried.
    let refusal: unknown;
    for (const limit of [1_048_576, 10_485_760]) {
      const value = 'x'.repeat(limit + 1 - JSON.stringify(['SET', key('oversized'), '']).length);
      refusal = await client.set(key('oversized'), value).then(
        () => undefined,
        (error: unknown) => error,
      );
      if (refusal !== undefined) {
        console.log(`[upstash-live] a body of ${limit + 1} bytes: HTTP ${sent.at(-1)!.status}, ${(refusal as Error).message}`);
        break;
      }
    }
    if (refusal === undefined) {
      console.log('[upstash-live] skipped the size refusal: this database accepts bodies over 10 MB');
      context.skip('this database accepts bodies over 10 MB');
    }
    expect((refusal as Error).message).toMatch(/^ERR max request size exceeded, command was: SET \(HTTP 4\d\d\)$/);
  });

  it('a wrong token: one request, refused with 401 WRONGPASS', async () => {
    const from = sent.length;
    const error: unknown = await rest({ token: 'not-the-token' })
      .get(key('auth'))
      .catch((e: unknown) => e);
    expect((error as Error).message).toMatch(/^WRONGPASS invalid or missing auth token.*, command was: GET \(HTTP 401\)$/);
    expect(sent.slice(from).map((s) => [s.command, s.status])).toEqual([['GET', 401]]);
  });

  it("a script's own error that mentions NOSCRIPT is no cache miss: one EVALSHA, never followed by EVAL", async () => {
    const client = rest();
    const script = "#!lua flags=allow-key-locking\nreturn redis.call('INCR', KEYS[1]) + error('NOSCRIPT in a message')";
    const sha1 = (await client.command(['SCRIPT', 'LOAD', script])) as string;
    const from = sent.length;
    const error: unknown = await runScript(
      { evalsha: (k, a) => client.evalsha(sha1, k, a), eval: (k, a) => client.eval(script, k, a) },
      [key('script-error')],
      [],
    ).catch((e: unknown) => e);
    expect(isNoScript(error)).toBe(false);
    expect((error as Error).message).toMatch(/NOSCRIPT in a message/);
    expect(commandsSince(from)).toEqual(['EVALSHA']);
  });

  it('a flagged script that touches a key not in KEYS fails', async () => {
    const error: unknown = await rest()
      .eval("#!lua flags=allow-key-locking\nreturn redis.call('GET', ARGV[1])", [key('declared')], [key('undeclared')])
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(Error);
    console.log(`[upstash-live] undeclared key: ${(error as Error).message}`);
    expect((error as Error).message).toMatch(/Dynamic keys are not allowed/);
  });

  it('reads its own writes through the sync token', async (context) => {
    const client = rest();
    const from = sent.length;
    await client.set(key('ryw'), '0');
    // The database's answers carry upstash-sync-token where it has read regions to keep consistent; without
    // them there is nothing to catch up (a regional database without read replicas).
    if (sent[from]!.answeredToken === null) {
      console.log('[upstash-live] skipped read-your-writes: the database sent no upstash-sync-token (no read region)');
      context.skip('the database sent no upstash-sync-token (no read region)');
    }
    for (let i = 1; i <= 10; i++) {
      await client.set(key('ryw'), String(i));
      expect(await client.get(key('ryw'))).toBe(String(i));
    }
    const exchanges = sent.slice(from);
    for (let i = 1; i < exchanges.length; i++) {
      expect(exchanges[i]!.syncToken).toBe(exchanges[i - 1]!.answeredToken ?? exchanges[i - 1]!.syncToken);
    }
  });

  it('a timeout: one rejection after exactly one request', async () => {
    // Live, 1 ms cannot be met; the fixture is told to hang instead (loopback can answer in a millisecond).
    if (fixture !== undefined) fixture.setFault('hang');
    try {
      const from = sent.length;
      const started = Date.now();
      const error: unknown = await rest({ timeout: LIVE ? 1 : 200 })
        .get(key('timeout'))
        .catch((e: unknown) => e);
      expect(String(error)).toMatch(/abort|timeout/i);
      expect(Date.now() - started).toBeLessThan(5_000);
      expect(commandsSince(from)).toEqual(['GET']);
    } finally {
      fixture?.setFault(undefined);
    }
  });
});
