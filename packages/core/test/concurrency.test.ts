/**
 * The concurrency limiter (from the article 'Scaling your API with rate limiters') over a store that runs core's
 * `evaluateLease()`: modes, failures, abort signals and options. The store contract itself (every store that
 * announces `lease`) is checked by the conformance suite's "concurrency leases" group.
 */
import fc from 'fast-check';
import { describe, expect, test } from 'vitest';
import type { Store } from '../src/index.js';
import { createConcurrencyLimiter, type ConcurrencyLimiterOptions } from '../src/concurrency/index.js';
import { evaluateLease, type LeaseEntries, type LeaseRequest, type LeaseResult } from '../src/store/index.js';

const CLOCK_START = 1_700_000_000_000;

/** A lease store over a Map, answering with a promise; `failing` makes every call reject. */
class LeaseStore implements Store {
  readonly capabilities = { synchronous: false, clock: 'client', operations: ['limit', 'reset', 'lease'] } as const;
  readonly records = new Map<string, { entries: LeaseEntries; expiresAt: number }>();
  failing = false;
  calls = 0;

  limit(): never {
    throw new Error('not used');
  }

  reset(): void {}

  lease(request: LeaseRequest): Promise<LeaseResult> {
    this.calls++;
    if (this.failing) return Promise.reject(new Error('connection reset'));
    const key = `${request.key}:lease`;
    const record = this.records.get(key);
    const evaluation = evaluateLease(
      record !== undefined && record.expiresAt > request.now ? record.entries : undefined,
      request,
      request.now,
    );
    if (evaluation.ttlMs > 0) this.records.set(key, { entries: evaluation.entries, expiresAt: request.now + evaluation.ttlMs });
    else this.records.delete(key);
    return Promise.resolve(evaluation.result);
  }
}

function setup(options: Partial<ConcurrencyLimiterOptions> = {}) {
  const clock = { now: CLOCK_START };
  const store = new LeaseStore();
  const limiter = createConcurrencyLimiter({ store, limit: 2, ttl: '10s', clock: () => clock.now, ...options });
  return { clock, store, limiter };
}

describe('evaluateLease: the reference', () => {
  test('never more than `limit` live leases, whatever the order of acquires, releases, extends and clock moves', () => {
    const op = fc.record({
      op: fc.constantFrom('acquire', 'release', 'extend' as const),
      id: fc.constantFrom('a', 'b', 'c', 'd', 'e'),
      move: fc.oneof(
        fc.constant(0),
        fc.integer({ min: 1, max: 3000 }),
        fc.integer({ min: -3000, max: -1 }),
        fc.integer({ min: 100_000, max: 10_000_000 }),
      ),
      ttlMs: fc.integer({ min: 1, max: 5000 }),
    });
    fc.assert(
      fc.property(fc.integer({ min: 1, max: 4 }), fc.array(op, { maxLength: 60 }), (limit, ops) => {
        let now = CLOCK_START;
        let entries: LeaseEntries | undefined;
        for (const { op: kind, id, move, ttlMs } of ops) {
          now = Math.max(0, now + move);
          const { result, entries: next } = evaluateLease(entries, { key: 'k', op: kind, id, limit, ttlMs, now }, now);
          expect(next.filter(([, e]) => e > now).length).toBeLessThanOrEqual(limit);
          expect(result.held).toBe(next.length);
          if (kind === 'acquire' && result.ok) expect(next.some(([i, e]) => i === id && e === now + ttlMs)).toBe(true);
          if (kind === 'release') expect(next.some(([i]) => i === id)).toBe(false);
          entries = next;
        }
      }),
    );
  });
});

describe('createConcurrencyLimiter', () => {
  test('shadow counts and reports but never refuses; off never calls the store', async () => {
    const { store, limiter } = setup({ limit: 1 });
    const first = await limiter.acquire('a');
    expect(first.allowed).toBe(true);
    limiter.configure({ mode: 'shadow' });
    const second = await limiter.acquire('a');
    expect(second).toMatchObject({ allowed: true, reason: 'shadow', held: 1 });
    expect(await second.lease!.release()).toBe(false); // holds nothing
    limiter.configure({ mode: 'off' });
    const calls = store.calls;
    expect(await limiter.acquire('a')).toMatchObject({ allowed: true, reason: 'disabled' });
    expect(store.calls).toBe(calls);
  });

  test("a store failure is degraded and explained: 'allow' lets through holding nothing, 'deny' refuses", async () => {
    for (const onStoreError of ['allow', 'deny'] as const) {
      const { store, limiter } = setup({ onStoreError, circuitBreaker: false });
      store.failing = true;
      const d = await limiter.acquire('a');
      expect(d).toMatchObject({ allowed: onStoreError === 'allow', reason: 'store_unavailable', degraded: true });
      expect(d.error).toMatchObject({ code: 'STORE_ERROR' });
      if (d.lease !== undefined) expect(await d.lease.release()).toBe(false);
    }
  });

  test('a release that fails never rejects: the lease then expires by itself', async () => {
    const { store, limiter } = setup();
    const d = await limiter.acquire('a');
    store.failing = true;
    await expect(d.lease!.release()).resolves.toBe(false);
  });

  test('an abort signal releases the lease (a client that went away), already aborted or later', async () => {
    const { store, limiter } = setup({ limit: 1 });
    const controller = new AbortController();
    const d = await limiter.acquire('a', { signal: controller.signal });
    expect(d.allowed).toBe(true);
    expect((await limiter.acquire('a')).allowed).toBe(false);
    controller.abort();
    await new Promise((resolve) => setTimeout(resolve, 0));
    expect((await limiter.acquire('a', { signal: AbortSignal.abort() })).allowed).toBe(true);
    await new Promise((resolve) => setTimeout(resolve, 0));
    expect([...store.records.values()].every((r) => r.entries.length === 0)).toBe(true);
  });

  test.each([
    [{ limit: 0 }, /limit must be a positive integer/],
    [{ ttl: 'forever' }, /ttl/],
    [{ onStoreError: 'ignore' }, /onStoreError must be 'allow' or 'deny'/],
    [{ mode: 'loud' }, /mode must be 'enforce', 'shadow' or 'off'/],
    [{ size: 3 }, /unknown option "size"/],
  ])('%j is refused, naming the field', (options, message) => {
    expect(() => setup(options as Partial<ConcurrencyLimiterOptions>)).toThrow(message);
  });

  test('a store without leases is refused at construction; a bad identity or signal is refused per call', async () => {
    const plain = {
      capabilities: { synchronous: true, clock: 'client', operations: ['limit', 'reset'] },
      limit: () => ({ now: 0, outcomes: [] }),
      reset: () => undefined,
    } as const;
    expect(() => createConcurrencyLimiter({ store: plain as unknown as Store, limit: 1 })).toThrow(/store must support leases/);
    const { limiter } = setup();
    await expect(limiter.acquire('')).rejects.toMatchObject({ code: 'INVALID_IDENTITY' });
    await expect(limiter.acquire('a', { signal: 'stop' as unknown as AbortSignal })).rejects.toThrow(/signal must be an AbortSignal/);
  });
});
