import { createLimiter, fixedWindow, isSluiceError, slidingWindowCounter, tokenBucket, type SyncLimiter } from '@sluice/core';
import { EXPIRY_GRACE_MS } from '@sluice/core/store';
import { describe, expect, expectTypeOf, it } from 'vitest';
import { memoryStore, type MemoryStore } from '../src/index.js';
import { heldKeys } from './support/held-keys.js';

const CLOCK_START = Date.UTC(2030, 0, 1);

function clocked(store: MemoryStore, rules = fixedWindow({ limit: 5, window: '1s' })) {
  const clock = { now: CLOCK_START };
  const limiter = createLimiter({ store, rules, clock: () => clock.now });
  return { clock, limiter };
}

function errorOf(run: () => unknown): { code?: string; message?: string } {
  try {
    run();
  } catch (error) {
    expect(isSluiceError(error), `expected a SluiceError, got ${String(error)}`).toBe(true);
    return error as { code: string; message: string };
  }
  throw new Error('expected an error, none was thrown');
}

describe('memoryStore: the maxKeys bound', () => {
  it('a flood of 50,000 unique identities into maxKeys 1,000 never tracks more than 1,000', () => {
    const store = memoryStore({ maxKeys: 1_000 });
    const { limiter } = clocked(store);
    let peak = 0;
    for (let i = 0; i < 50_000; i++) {
      expect(limiter.limitSync(`flood-${i}`).allowed).toBe(true);
      peak = Math.max(peak, store.size);
    }
    expect(peak).toBe(1_000);
    expect(store.size).toBe(1_000);
    // Least recently used go first: the newest 1,000 are the ones kept.
    const kept = heldKeys(store);
    expect(kept).toHaveLength(1_000);
    expect(kept.every((key) => Number(/flood-(\d+)/.exec(key)![1]) >= 49_000)).toBe(true);
  });

  it('an evicted identity starts afresh: eviction errs toward admitting, never toward denying', () => {
    const store = memoryStore({ maxKeys: 10 });
    const { limiter } = clocked(store);
    limiter.limitSync('victim', { cost: 5 });
    expect(limiter.limitSync('victim').allowed).toBe(false);
    for (let i = 0; i < 10; i++) limiter.limitSync(`other-${i}`);
    expect(heldKeys(store).some((key) => key.includes('{victim}'))).toBe(false);
    expect(limiter.limitSync('victim')).toMatchObject({ allowed: true, remaining: 4 });
  });

  it('counts identities, not rules: compound rules share one slot per identity', () => {
    const store = memoryStore({ maxKeys: 100 });
    const limiter = createLimiter({
      store,
      rules: [
        fixedWindow({ limit: 5, window: '1s' }),
        tokenBucket({ capacity: 5, refillRate: 1 }),
        fixedWindow({ limit: 50, window: '1h' }),
      ],
      clock: () => CLOCK_START,
    });
    for (let i = 0; i < 100; i++) limiter.limitSync(`user-${i}`);
    expect(store.size).toBe(100);
    // All 100 still hold all three rules' state: user-0 is still counted in each.
    expect(limiter.peekSync('user-0').rules.map((r) => r.remaining)).toEqual([4, 4, 49]);
  });

  it('limiters sharing one store share its bound', () => {
    const store = memoryStore({ maxKeys: 50 });
    const a = createLimiter({ store, rules: fixedWindow({ limit: 1, window: '1h' }), name: 'a', clock: () => CLOCK_START });
    const b = createLimiter({ store, rules: fixedWindow({ limit: 1, window: '1h' }), name: 'b', clock: () => CLOCK_START });
    for (let i = 0; i < 100; i++) {
      a.limitSync(`id-${i}`);
      b.limitSync(`id-${i}`);
    }
    expect(store.size).toBe(50);
  });
});

describe('memoryStore: expired state is dropped', () => {
  it('an expired state is never read back: the identity gets a fresh allowance', () => {
    const store = memoryStore();
    const { clock, limiter } = clocked(store);
    limiter.limitSync('alice', { cost: 5 });
    expect(limiter.limitSync('alice').allowed).toBe(false);
    clock.now = CLOCK_START + 1_000;
    expect(limiter.peekSync('alice')).toMatchObject({ allowed: true, remaining: 5 });
    expect(limiter.limitSync('alice')).toMatchObject({ allowed: true, remaining: 4 });
  });

  it('purgeExpired drops exactly the identities whose every rule has expired', () => {
    const store = memoryStore();
    const limiter = createLimiter({
      store,
      rules: fixedWindow({ limit: 5, window: '1s' }),
      quotaFor: (identity) =>
        identity.startsWith('long') ? [fixedWindow({ limit: 5, window: '1s' }), fixedWindow({ limit: 5, window: '1m' })] : undefined,
      clock: () => CLOCK_START,
    });
    for (let i = 0; i < 100; i++) limiter.limitSync(`short-${i}`);
    for (let i = 0; i < 10; i++) limiter.limitSync(`long-${i}`);
    expect(store.size).toBe(110);
    expect(store.purgeExpired(CLOCK_START + 999)).toBe(0);
    expect(store.purgeExpired(CLOCK_START + 1_000)).toBe(100);
    expect(store.size).toBe(10);
    expect(heldKeys(store).every((key) => key.includes('{long-'))).toBe(true);
    expect(store.purgeExpired(CLOCK_START + 60_000)).toBe(10);
    expect(store.size).toBe(0);
  });

  it('the incremental sweep on the write path drops expired identities without purgeExpired', () => {
    const store = memoryStore();
    const { clock, limiter } = clocked(store);
    for (let i = 0; i < 100; i++) limiter.limitSync(`old-${i}`);
    clock.now = CLOCK_START + 2_000 + EXPIRY_GRACE_MS; // every old-* state has expired, and its grace has passed
    let fresh = 0;
    // Write new identities until the sweep has run (documented: every 1,024 writes), with a generous cap.
    while (store.size === 100 + fresh && fresh < 4_096) {
      limiter.limitSync(`new-${fresh}`);
      fresh++;
    }
    expect(store.size, 'the sweep never ran').toBeLessThan(100 + fresh);
    const kept = heldKeys(store);
    // Only expired identities were dropped: every new one is still there.
    expect(kept.filter((key) => key.includes('{new-'))).toHaveLength(fresh);
    expect(kept.filter((key) => key.includes('{old-')).length).toBeLessThan(100);
  });

  it('reset removes the identity from the store', () => {
    const store = memoryStore();
    const { limiter } = clocked(store);
    limiter.limitSync('alice');
    expect(store.size).toBe(1);
    return limiter.reset('alice').then(() => expect(store.size).toBe(0));
  });

  it('clear forgets everything', () => {
    const store = memoryStore();
    const { limiter } = clocked(store);
    for (let i = 0; i < 10; i++) limiter.limitSync(`user-${i}`, { cost: 5 });
    store.clear();
    expect(store.size).toBe(0);
    expect(limiter.limitSync('user-0')).toMatchObject({ allowed: true, remaining: 4 });
  });
});

describe('memoryStore: synchronous limiter', () => {
  it('a limiter over a memory store has limitSync, peekSync and refundSync by its type', () => {
    const limiter = createLimiter({ store: memoryStore(), rules: fixedWindow({ limit: 1, window: '1s' }) });
    expectTypeOf(limiter).toEqualTypeOf<SyncLimiter>();
    expectTypeOf(limiter.limitSync).returns.toHaveProperty('allowed');
  });

  it('limitSync, peekSync and refundSync answer directly and agree with limit()', async () => {
    const store = memoryStore();
    const { clock, limiter } = clocked(store, tokenBucket({ capacity: 3, refillRate: 1, interval: '1s' }));
    const first = limiter.limitSync('alice', { cost: 2 });
    expect(first).not.toBeInstanceOf(Promise);
    expect(first).toMatchObject({
      allowed: true,
      remaining: 1,
      resetAt: CLOCK_START + 2_000,
      retryAfter: 0,
      degraded: false,
      now: CLOCK_START,
    });
    expect(limiter.peekSync('alice', { cost: 2 })).toMatchObject({ allowed: false, remaining: 1, retryAfter: 1_000 });
    expect(limiter.refundSync('alice')).toMatchObject({ allowed: true, remaining: 2, resetAt: CLOCK_START + 1_000 });
    // The async API sees the same state.
    expect(await limiter.limit('alice', { cost: 2 })).toMatchObject({ allowed: true, remaining: 0, resetAt: CLOCK_START + 3_000 });
    clock.now = CLOCK_START + 1_000;
    expect(limiter.limitSync('alice')).toMatchObject({ allowed: true, remaining: 0, resetAt: CLOCK_START + 4_000 });
  });

  it('answers a limit() call in the same tick: no await needed before the state is updated', () => {
    const store = memoryStore();
    const { limiter } = clocked(store, fixedWindow({ limit: 2, window: '1m' }));
    void limiter.limit('alice');
    void limiter.limit('alice');
    expect(limiter.peekSync('alice')).toMatchObject({ allowed: false, remaining: 0 });
  });
});

describe('memoryStore: option validation', () => {
  it.each([0, -1, 1.5, Number.NaN, Number.POSITIVE_INFINITY, 2 ** 53, '100', true])(
    'rejects maxKeys %s with INVALID_OPTION naming the field',
    (maxKeys) => {
      const error = errorOf(() => memoryStore({ maxKeys: maxKeys as number }));
      expect(error.code).toBe('INVALID_OPTION');
      expect(error.message).toMatch(/^\[sluice\] memoryStore: maxKeys must be an integer from 1 to 10000000 .*, got /);
    },
  );

  it('rejects an unknown option with UNKNOWN_OPTION, naming it and the accepted ones', () => {
    const error = errorOf(() => memoryStore({ maxkeys: 5 } as never));
    expect(error.code).toBe('UNKNOWN_OPTION');
    expect(error.message).toContain('"maxkeys"');
    expect(error.message).toContain('accepted options are maxKeys');
  });

  it.each([null, 5, 'big'])('rejects options that are not an object (%s)', (options) => {
    expect(errorOf(() => memoryStore(options as never)).code).toBe('INVALID_OPTION');
  });

  it('accepts no options, and the smallest bound', () => {
    expect(memoryStore().capabilities).toEqual({
      synchronous: true,
      clock: 'client',
      operations: ['limit', 'reset', 'take', 'reserve', 'lease'],
    });
    const tiny = memoryStore({ maxKeys: 1 });
    const limiter = createLimiter({ store: tiny, rules: fixedWindow({ limit: 1, window: '1h' }), clock: () => CLOCK_START });
    limiter.limitSync('a');
    limiter.limitSync('b');
    expect(tiny.size).toBe(1);
  });
});

describe('memoryStore: maxKeys upper bound', () => {
  it('refuses a cap above 10,000,000 before lru-cache reserves memory for it', () => {
    expect(() => memoryStore({ maxKeys: 10_000_001 })).toThrow(/maxKeys must be an integer from 1 to 10000000/);
    expect(memoryStore({ maxKeys: 10_000 }).size).toBe(0);
  });
});

describe('memoryStore: a clock that steps back', () => {
  it('regression: a refund back to full deletes the state, as SQLite and Redis do (was A A A D, now A A A A)', () => {
    let now = 1500;
    const store = memoryStore();
    const limiter = createLimiter({ store, rules: fixedWindow({ limit: 1, window: 1000 }), clock: () => now });
    const seen: boolean[] = [];
    seen.push(limiter.limitSync('k').allowed);
    now = 2100;
    seen.push(limiter.refundSync('k').allowed);
    expect(store.size, 'the refunded-to-full state is gone').toBe(0);
    now = 1900;
    seen.push(limiter.limitSync('k').allowed);
    now = 2200;
    seen.push(limiter.limitSync('k').allowed);
    expect(seen).toEqual([true, true, true, true]);
  });

  it('regression: cost 0 after a backward step is allowed (a sliding window counter denied it)', () => {
    let now = 996;
    const limiter = createLimiter({ store: memoryStore(), rules: slidingWindowCounter({ limit: 1, window: 10 }), clock: () => now });
    limiter.limitSync('k');
    now = 1002;
    expect(limiter.limitSync('k').allowed).toBe(true);
    now = 999;
    expect(limiter.limitSync('k', { cost: 0 }).allowed).toBe(true);
  });

  it('the sweep keeps an expired state for EXPIRY_GRACE_MS, so a clock stepping back within it finds the state', () => {
    let now = CLOCK_START;
    const store = memoryStore();
    const limiter = createLimiter({ store, rules: fixedWindow({ limit: 1, window: '1s' }), clock: () => now });
    limiter.limitSync('old');
    now = CLOCK_START + EXPIRY_GRACE_MS; // expired 59 s ago: inside the grace
    for (let i = 0; i < 2048; i++) limiter.limitSync(`filler-${i}`); // two sweeps
    expect(heldKeys(store).some((key) => key.includes('{old}'))).toBe(true);
    now = CLOCK_START + 10; // back in old's window
    expect(limiter.limitSync('old').allowed).toBe(false);
  });
});

describe('concurrency leases', () => {
  it('an identity whose last lease is released reads as holding none, and its slot is free again', () => {
    // (The record is kept empty rather than deleted: lru-cache clears all its slots when its last entry goes, which
    // `pnpm bench http --stack` measured at about 300 µs a request. The cost is for the bench, not this test.)
    const store = memoryStore();
    const request = { key: 'sluice:default:{a}', id: 'lease-1', limit: 2, ttlMs: 1000, now: CLOCK_START } as const;
    expect(store.lease({ ...request, op: 'acquire' })).toMatchObject({ ok: true, held: 1 });
    expect(store.lease({ ...request, op: 'release' })).toMatchObject({ ok: true, held: 0 });
    // Released: no key is listed, and the record reads as empty; the next acquire finds the slot free.
    expect(store.keys()).toEqual([]);
    expect(store.lease({ ...request, id: 'lease-2', op: 'acquire' })).toMatchObject({ ok: true, held: 1 });
  });
});
