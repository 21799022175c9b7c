import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { Redis } from 'ioredis';
import { createLimiter, fixedWindow, gcra, isSluiceError, slidingWindowLog, tokenBucket, type ResolvedRule } from '@sluice/core';
import { redisStore } from '../src/index.js';
import { CLIENT_CLOCK_EXPIRY_SLACK_MS, LIMIT_SCRIPT, LIMIT_SCRIPT_SHA1 } from '../src/scripts/index.js';
import { startRedis, type RedisServer } from '../../../../test/harness/redis.js';

let server: RedisServer;
const clients: Redis[] = [];

function connect(options: { enableAutoPipelining?: boolean } = {}): Redis {
  const client = new Redis({ host: server.host, port: server.port, ...options });
  clients.push(client);
  return client;
}

async function commandCalls(client: Redis): Promise<Record<string, number>> {
  const info = await client.info('commandstats');
  const calls: Record<string, number> = {};
  for (const match of info.matchAll(/cmdstat_(\w+):calls=(\d+),.*?failed_calls=(\d+)/g)) {
    calls[match[1]!] = Number(match[2]);
    calls[`${match[1]}_failed`] = Number(match[3]);
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

describe('scripts entry', () => {
  test('LIMIT_SCRIPT_SHA1 is the SHA-1 of LIMIT_SCRIPT', () => {
    expect(createHash('sha1').update(LIMIT_SCRIPT).digest('hex')).toBe(LIMIT_SCRIPT_SHA1);
  });

  test('the built scripts entry imports neither ioredis nor a Node built-in (edge code reuses it)', () => {
    // Follows the entry's relative imports (tsup shares chunks between entries) and checks every module reached.
    const seen = new Set<string>();
    const visit = (file: string) => {
      if (seen.has(file)) return;
      seen.add(file);
      const built = readFileSync(new URL(`../dist/${file}`, import.meta.url), 'utf8');
      const specifiers = [...built.matchAll(/(?:from\s*|import\s*\(|require\()\s*["']([^"']+)["']/g)].map((m) => m[1]!);
      for (const specifier of specifiers) {
        if (specifier.startsWith('./')) visit(specifier.slice(2));
        else expect(specifier, `${file} imports ${specifier}`).toBe('@sluice/core');
      }
      expect(built, file).not.toMatch(/\bBuffer\b|\bprocess\./);
    };
    visit('scripts.js');
    visit('scripts.cjs');
    expect(seen.size).toBeGreaterThanOrEqual(2);
  });
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

  test('capabilities announce the clock in use', () => {
    const client = connect();
    expect(redisStore(client).capabilities).toEqual({ synchronous: false, clock: 'store', operations: ['limit', 'reset'] });
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

  for (const enableAutoPipelining of [false, true]) {
    test(`exactly one EVALSHA per decision, compound rules included (autopipelining ${enableAutoPipelining ? 'on' : 'off'})`, async () => {
      const client = connect({ enableAutoPipelining });
      const store = redisStore(client, { clock: 'client' });
      const rules = [tokenBucket({ capacity: 5, refillRate: 1 }), fixedWindow({ limit: 3, window: '1m' }), gcra({ limit: 10, period: '1s' })];
      const limiter = createLimiter({ store, rules, name: `pipe${enableAutoPipelining}`, clock: () => 1_700_000_000_000 });
      await limiter.limit('warm'); // loads the script if needed
      await client.config('RESETSTAT');
      const decisions = await Promise.all(Array.from({ length: 10 }, () => limiter.limit('one')));
      const calls = await commandCalls(client);
      expect(calls.evalsha).toBe(10);
      expect(calls.eval ?? 0).toBe(0);
      expect(decisions.filter((d) => d.allowed)).toHaveLength(3); // the fixed window's 3 bind
      expect(decisions.filter((d) => !d.allowed).every((d) => d.rule === 'fw:60000')).toBe(true);
    });
  }

  test('NOSCRIPT: loaded and retried exactly once, never counted twice', async () => {
    const client = connect();
    const limiter = createLimiter({ store: redisStore(client, { clock: 'client' }), rules: fixedWindow({ limit: 5, window: '1h' }), name: 'noscript', clock: () => 1_700_000_000_000 });
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

  test('other script errors are not retried', async () => {
    const client = connect();
    const store = redisStore(client, { clock: 'client' });
    const bogus = { id: 'x', algorithm: 'nope', params: {}, limit: 1 } as unknown as ResolvedRule;
    await store.limit({ key: 'warm:{w}', rules: [tokenBucket({ capacity: 1, refillRate: 1 })], cost: 1, mode: 'consume', now: 1 });
    await client.config('RESETSTAT');
    // An unknown algorithm fails in the encoder before any command; a corrupt ARGV fails inside the script.
    await expect(store.limit({ key: 'err:{e}', rules: [bogus], cost: 1, mode: 'consume', now: 1 })).rejects.toThrow(/unknown algorithm/);
    const bad = { ...tokenBucket({ capacity: 1, refillRate: 1 }) };
    (bad as { params: unknown }).params = { capacity: 'x', refillRate: 1, intervalMs: 1000, refill: 0 };
    await expect(store.limit({ key: 'err:{e}', rules: [bad], cost: 1, mode: 'consume', now: 1 })).rejects.toThrow();
    const calls = await commandCalls(client);
    expect(calls.evalsha).toBe(1);
    expect(calls.eval ?? 0).toBe(0);
  });

  test('every key gets an expiry in the same script; state that is already spent is deleted', async () => {
    const client = connect();
    const rules = [slidingWindowLog({ limit: 3, window: '10s' }), fixedWindow({ limit: 3, window: '1m' }), tokenBucket({ capacity: 3, refillRate: 1 })];
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
    const result = await store.limit({ key: 'exp:{s}', rules: [rule], cost: 1, mode: 'consume', now: 0 });
    const expected = result.outcomes[0]!.resetAt - result.now;
    const pttl = await client.pttl('exp:{s}:fw:10000');
    expect(pttl).toBeGreaterThanOrEqual(expected - 20);
    expect(pttl).toBeLessThanOrEqual(expected);

    const now = 1_700_000_003_000; // 7 s before its window ends
    await redisStore(client, { clock: 'client' }).limit({ key: 'exp:{c}', rules: [rule], cost: 1, mode: 'consume', now });
    const clientPttl = await client.pttl('exp:{c}:fw:10000');
    expect(clientPttl).toBeGreaterThan(7_000 + CLIENT_CLOCK_EXPIRY_SLACK_MS - 20);
    expect(clientPttl).toBeLessThanOrEqual(7_000 + CLIENT_CLOCK_EXPIRY_SLACK_MS);
  });

  test('regression: a frozen client clock keeps state across real milliseconds (1 ms ttl)', async () => {
    const client = connect();
    const limiter = createLimiter({ store: redisStore(client, { clock: 'client' }), rules: gcra({ limit: 3, period: 1 }), name: 'frozen', clock: () => 1_893_456_000_000 });
    expect((await limiter.limit('a', { cost: 3 })).allowed).toBe(true);
    await new Promise((r) => setTimeout(r, 5));
    expect((await limiter.limit('a')).allowed).toBe(false);
  });

  test('reset deletes the identity’s keys in one command', async () => {
    const client = connect();
    const limiter = createLimiter({ store: redisStore(client), rules: [fixedWindow({ limit: 1, window: '1m' }), gcra({ limit: 1, period: '1m' })], name: 'reset' });
    expect((await limiter.limit('r')).allowed).toBe(true);
    expect((await limiter.limit('r')).allowed).toBe(false);
    await limiter.reset('r');
    expect(await client.keys('sluice:reset:*')).toEqual([]);
    expect((await limiter.limit('r')).allowed).toBe(true);
  });
});
