/**
 * The bug this pins: a synchronous store with an asynchronous fallback double-counted through @sluice/http. A
 * failing SQLite store with `onStoreError: someAsyncStore`: `limitSync` consumed from the fallback and then threw
 * UNSUPPORTED_OPERATION; the handler caught it and called `limit()`, which consumed again. Each request cost the
 * fallback 2 units and the breaker counted 2 failures. One decision must consume once, on every path.
 */
import { createLimiter, tokenBucket, type Store } from '@sluice/core';
import type { LimitRequest } from '@sluice/core/store';
import { describe, expect, it } from 'vitest';
import { createHandler } from '../src/index.js';
import { asyncMemoryStore, request, written } from './support.js';

describe('a synchronous store falling back to an asynchronous one', () => {
  it('regression: each request consumes once from the fallback and counts one store failure', async () => {
    let primaryCalls = 0;
    // A synchronous store that fails every call, as SQLite does on a locked or unreadable file.
    const failing: Store = {
      capabilities: { synchronous: true, clock: 'client', operations: ['limit', 'reset'] },
      limit: () => {
        primaryCalls++;
        throw new Error('SQLITE_BUSY: database is locked');
      },
      reset: () => undefined,
    };
    const fallbackStore = asyncMemoryStore();
    const fallbackCalls: LimitRequest[] = [];
    const fallback: Store = { ...fallbackStore, limit: (r) => (fallbackCalls.push(r), fallbackStore.limit(r)) };
    const limiter = createLimiter({
      store: failing,
      name: 'api',
      rules: tokenBucket({ capacity: 10, refillRate: 1, interval: '1h' }),
      onStoreError: fallback,
      circuitBreaker: { failureThreshold: 4, cooldown: 60_000 },
    });
    const handler = createHandler({ limiter });
    for (let i = 1; i <= 3; i++) {
      const result = await handler.run(request());
      expect(result.allowed).toBe(true);
      expect(written(result.headers).ratelimit).toBe(`"api";r=${10 - i};t=${i * 3600}`);
    }
    expect(fallbackCalls).toHaveLength(3);
    expect(primaryCalls).toBe(3);
    expect(limiter.circuit, 'three failures, not six: the breaker (threshold 4) is still closed').toBe('closed');
  });
});
