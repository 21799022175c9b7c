/**
 * Type-level: `limitSync` exists, by its type, only on a limiter over a synchronous store. Checked by
 * `tsc --noEmit -p tsconfig.json` (tests are in the project); vitest runs the few runtime assertions.
 */
import { expectTypeOf, test } from 'vitest';
import { createLimiter, fixedWindow, type Decision, type Limiter, type Store, type SyncLimiter } from '../src/index.js';
import { AsyncMapStore, MapStore } from './support/map-store.js';

const rules = fixedWindow({ limit: 1, window: '1s' });

test('a synchronous store gives a SyncLimiter with limitSync, peekSync and refundSync', () => {
  const limiter = createLimiter({ store: new MapStore(), rules });
  expectTypeOf(limiter).toEqualTypeOf<SyncLimiter>();
  expectTypeOf(limiter).toHaveProperty('limitSync');
  expectTypeOf(limiter.limitSync).returns.toEqualTypeOf<Decision>();
  expectTypeOf(limiter.peekSync).returns.toEqualTypeOf<Decision>();
  expectTypeOf(limiter.refundSync).returns.toEqualTypeOf<Decision>();
});

test('an asynchronous store, or a store of unknown kind, gives a Limiter without limitSync', () => {
  const limiter = createLimiter({ store: new AsyncMapStore(), rules });
  expectTypeOf(limiter).toEqualTypeOf<Limiter>();
  expectTypeOf(limiter).not.toHaveProperty('limitSync');
  expectTypeOf(limiter).not.toHaveProperty('peekSync');
  expectTypeOf(limiter.limit).returns.toEqualTypeOf<Promise<Decision>>();
  // @ts-expect-error limitSync does not exist on a limiter over an async store
  expectTypeOf(limiter.limitSync).toBeFunction();

  const anyStore: Store = new MapStore();
  expectTypeOf(createLimiter({ store: anyStore, rules })).not.toHaveProperty('limitSync');
});
