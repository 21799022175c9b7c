/**
 * The tier's entries are an LRU bounded by maxKeys whose recency is kept lazily (an entry used again is moved to the
 * front only when more than maxKeys / 8 others were moved there since it was): identities used again outlive those
 * that were not, through the memory path (found by identity) and through `limit(request)` (found by key) alike.
 */
import { describe, expect, test } from 'vitest';
import { createLimiter, fixedWindow, type Limiter } from '@sluice/core';
import { tieredStore } from '../src/index.js';
import { SharedStore } from './support.js';

const CLOCK_START = 1_700_000_000_000;

describe('maxKeys', () => {
  for (const path of ['the memory path', 'limit(request)'] as const) {
    test(`identities used again are kept over those not used since, when new ones evict (${path})`, async () => {
      const now = CLOCK_START;
      const clock = () => now;
      const shared = new SharedStore();
      const store = tieredStore({ remote: shared, instances: 4, strategy: 'deny-cache', clock, timers: false, maxKeys: 16 });
      const limiter = createLimiter({ store, rules: fixedWindow({ limit: 1, window: '1m' }), clock });
      // limit(id) without options takes the memory path; a cost of 1 given as an option takes limit(request).
      const call = (l: Limiter, id: string) => (path === 'the memory path' ? l.limit(id) : l.limit(id, { cost: 1 }));
      const refused = async (id: string) => {
        await call(limiter, id); // allowed: the window's one unit
        expect((await call(limiter, id)).allowed).toBe(false); // refused by the shared store, remembered
      };
      for (let i = 0; i < 16; i++) await refused(`id-${i}`);
      for (let i = 0; i < 8; i++) await call(limiter, `id-${i}`); // replayed from memory: used again
      for (let i = 16; i < 24; i++) await refused(`id-${i}`); // 8 new identities: 8 evictions
      const before = store.stats();
      for (let i = 0; i < 8; i++) expect((await call(limiter, `id-${i}`)).allowed).toBe(false);
      const after = store.stats();
      expect(after.denyCacheHits - before.denyCacheHits).toBe(8);
      expect(after.remoteCalls - before.remoteCalls).toBe(0);
      // One that was not used again was evicted: asked of the shared store again.
      await call(limiter, 'id-8');
      expect(store.stats().remoteCalls - after.remoteCalls).toBe(1);
      await store.close();
    });
  }
});
