/**
 * Upstash refuses a request body over 1 MB (`ERR max request size exceeded`) and every decision in it would fail:
 * the store splits a batch whose script call would pass UPSTASH_MAX_REQUEST_BYTES, measured as the bytes of its
 * EVAL body in UTF-8 JSON (the larger of the call's two forms). Checked at the edge, byte for byte, with keys
 * that JSON escapes, through a fetch that records every request the store sends to the fixture.
 */
import { createLimiter, fixedWindow, isSluiceError } from '@sluice/core';
import type { LimitRequest } from '@sluice/core/store';
import { encodeCall } from '@sluice/redis-script';
import { beforeEach, describe, expect, it } from 'vitest';
import { UPSTASH_LIMIT_SCRIPT, UPSTASH_MAX_REQUEST_BYTES, upstashStore, type UpstashFetchInit } from '../src/index.js';
import { identity, token, url } from './helpers.js';

const rules = [fixedWindow({ limit: 5, window: '1m', id: 'r' })];
const utf8 = new TextEncoder();

/** The EVAL body of one script call deciding `requests`: what the store must keep at or under the limit. */
function evalBytes(requests: readonly LimitRequest[]): number {
  const { keys, args } = encodeCall(requests, 'store');
  return utf8.encode(JSON.stringify(['EVAL', UPSTASH_LIMIT_SCRIPT, keys.length, ...keys, ...args])).length;
}

const decision = (key: string): LimitRequest => ({ key, rules, cost: 1, operation: 'consume', now: 0 });

/** A store on the fixture whose every request is recorded: the number of decisions each EVALSHA carried. */
function recordedStore(options: { batch?: boolean } = {}) {
  const sent: Array<{ command: string; keys: number }> = [];
  /** The EVAL body each EVALSHA stands for: its bytes with the script in place of the digest. */
  const bodies: number[] = [];
  const store = upstashStore(
    {
      url,
      token,
      fetch: (input: string, init: UpstashFetchInit) => {
        const [command, , keys, ...rest] = JSON.parse(init.body) as [string, string, number, ...string[]];
        sent.push({ command, keys });
        bodies.push(utf8.encode(JSON.stringify(['EVAL', UPSTASH_LIMIT_SCRIPT, keys, ...rest])).length);
        return fetch(input, init);
      },
    },
    { maxBatch: 1000, ...options },
  );
  return { store, sent, bodies };
}

/** `count` keys whose batch's EVAL body is exactly `bytes`: the last key takes up what the others leave. */
function keysFilling(count: number, bytes: number, unit = 'x'): string[] {
  const base = identity('size');
  const keys = Array.from({ length: count }, (_, i) => `${base}:${i}:${unit.repeat(500)}`);
  const missing = bytes - evalBytes(keys.map(decision));
  expect(missing).toBeGreaterThanOrEqual(0);
  keys[count - 1] += 'y'.repeat(missing);
  expect(evalBytes(keys.map(decision))).toBe(bytes);
  return keys;
}

let store: ReturnType<typeof recordedStore>;

beforeEach(async () => {
  store = recordedStore();
  await store.store.limit(decision(identity('warm'))); // loads the script: later calls are one EVALSHA each
  store.sent.length = 0;
  store.bodies.length = 0;
});

describe('a batch is split by its request body size', () => {
  it(`a batch whose EVAL body is exactly UPSTASH_MAX_REQUEST_BYTES (${UPSTASH_MAX_REQUEST_BYTES}) goes in one request`, async () => {
    const keys = keysFilling(1000, UPSTASH_MAX_REQUEST_BYTES);
    const results = await Promise.all(keys.map((key) => store.store.limit(decision(key))));
    expect(results.every((r) => r.outcomes[0]!.allowed)).toBe(true);
    expect(store.sent).toEqual([{ command: 'EVALSHA', keys: 1000 }]);
  });

  it('one byte more splits it in two, every decision answered', async () => {
    const keys = keysFilling(1000, UPSTASH_MAX_REQUEST_BYTES + 1);
    const results = await Promise.all(keys.map((key) => store.store.limit(decision(key))));
    expect(results.every((r) => r.outcomes[0]!.allowed)).toBe(true);
    expect(store.sent).toEqual([
      { command: 'EVALSHA', keys: 999 },
      { command: 'EVALSHA', keys: 1 },
    ]);
  });

  it.each([
    ['control characters (\\u00XX in JSON, 6 bytes each)', '\u0001'],
    ['CJK (3 bytes each in UTF-8)', '漢'],
    ['quotes and backslashes (2 bytes each)', '"\\'],
    ['emoji (surrogate pairs, 4 bytes each)', '🦀'],
  ])('keys of %s: each request as full as the limit allows, none over it', async (_name, unit) => {
    const base = identity('escapes');
    const keys = Array.from({ length: 1000 }, (_, i) => `${base}:${i}:${unit.repeat(600)}`);
    const results = await Promise.all(keys.map((key) => store.store.limit(decision(key))));
    expect(results.every((r) => r.outcomes[0]!.allowed)).toBe(true);
    expect(store.sent.length).toBeGreaterThan(1);
    let at = 0;
    for (const { command, keys: count } of store.sent) {
      expect(command).toBe('EVALSHA');
      const carried = keys.slice(at, at + count).map(decision);
      expect(evalBytes(carried)).toBeLessThanOrEqual(UPSTASH_MAX_REQUEST_BYTES);
      // Full: the next decision would have taken it over.
      if (at + count < keys.length) expect(evalBytes([...carried, decision(keys[at + count]!)])).toBeGreaterThan(UPSTASH_MAX_REQUEST_BYTES);
      at += count;
    }
    expect(at).toBe(1000);
  });

  it('through a limiter, the longest keys its options allow (64-character prefix, name and rule id, 128 control characters of identity): every decision answered, no request over the limit', async () => {
    const limiter = createLimiter({
      store: store.store,
      rules: fixedWindow({ limit: 5, window: '1m', id: 'r'.repeat(64) }),
      prefix: 'p'.repeat(64),
      name: 'n'.repeat(64),
      timeout: 10_000,
    });
    const identities = Array.from({ length: 1000 }, (_, i) => `${i}`.padEnd(128, '\u0001'));
    const decisions = await Promise.all(identities.map((who) => limiter.limit(who)));
    expect(decisions.filter((d) => d.degraded || !d.allowed)).toEqual([]);
    expect(store.sent.reduce((sum, s) => sum + s.keys, 0)).toBe(1000);
    // About 970,000 bytes as EVAL: a limiter's batch comes close to the limit, a store caller's keys can pass it.
    expect(Math.max(...store.bodies)).toBeGreaterThan(900_000);
    expect(Math.max(...store.bodies)).toBeLessThanOrEqual(UPSTASH_MAX_REQUEST_BYTES);
  });

  it('a decision whose request alone is over the limit fails alone, naming the size; the decisions around it are answered', async () => {
    const huge = `${identity('huge')}:${'x'.repeat(UPSTASH_MAX_REQUEST_BYTES)}`;
    const [before, alone, after] = await Promise.allSettled([
      store.store.limit(decision(identity('before'))),
      store.store.limit(decision(huge)),
      store.store.limit(decision(identity('after'))),
    ]);
    expect(before.status === 'fulfilled' && before.value.outcomes[0]!.allowed).toBe(true);
    expect(after.status === 'fulfilled' && after.value.outcomes[0]!.allowed).toBe(true);
    const error = alone.status === 'rejected' ? (alone.reason as Error) : undefined;
    expect(isSluiceError(error) && error.code).toBe('INVALID_OPTION');
    expect(error!.message).toMatch(/alone would be 10\d{5} bytes, over the store's limit of 1000000: shorten the key/);
    expect(store.sent.reduce((sum, s) => sum + s.keys, 0)).toBe(2);
  });

  it('without batching too: the oversized decision is refused before anything is sent', async () => {
    const single = recordedStore({ batch: false });
    const huge = `${identity('huge')}:${'漢'.repeat(UPSTASH_MAX_REQUEST_BYTES / 3)}`;
    await expect(single.store.limit(decision(huge))).rejects.toThrow(/alone would be \d+ bytes, over the store's limit/);
    expect(single.sent).toEqual([]);
  });
});
