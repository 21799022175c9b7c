/** tieredStore's options: each wrong one is refused with the field it names; lease and async need a remote store with take. */
import { describe, expect, test } from 'vitest';
import { tieredStore, type TieredStoreOptions } from '../src/index.js';
import { SharedStore } from './support.js';

describe('options', () => {
  const remote = new SharedStore();
  test.each([
    [{}, /remote must be a store/],
    [{ remote, instances: 0 }, /instances must be an integer from 1/],
    [{ remote, instances: 2.5 }, /instances must be an integer from 1/],
    [{ remote, instances: 2, strategy: 'lru' }, /strategy must be 'deny-cache', 'lease' or 'async'/],
    [{ remote, instances: 2, lease: { maxBatch: 0 } }, /lease.maxBatch must be an integer from 1/],
    [{ remote, instances: 2, lease: { ttl: 'soon' } }, /lease.ttl/],
    [{ remote, instances: 2, lease: { size: 3 } }, /unknown option "size"/],
    [
      { remote, instances: 2, async: { flushEvery: 10, maxUnsynced: 5 } },
      /async.maxUnsynced \(5\) must be at least async.flushEvery \(10\)/,
    ],
    [{ remote, instances: 2, timers: 'yes' }, /timers must be true or false/],
    [{ remote, instances: 2, waitUntil: 3 }, /waitUntil must be a function/],
    [{ remote, instances: 2, ttl: '1s' }, /unknown option "ttl"/],
  ])('%j is refused, naming the field', (options, message) => {
    expect(() => tieredStore(options as unknown as TieredStoreOptions)).toThrow(message);
  });

  test('lease and async need a remote store that announces take', () => {
    const noTake = {
      capabilities: { synchronous: false, clock: 'client', operations: ['limit', 'reset'] },
      limit: remote.limit.bind(remote),
      reset: remote.reset.bind(remote),
    } as const;
    expect(() => tieredStore({ remote: noTake, instances: 2, strategy: 'lease' })).toThrow(/needs a remote store that supports take/);
    expect(tieredStore({ remote: noTake, instances: 2 }).strategy).toBe('deny-cache');
  });
});
