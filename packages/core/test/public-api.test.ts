// The runtime surface of @sluice/core, listed name by name so it changes only on purpose: the root export is what
// an application calls, `@sluice/core/store` is what a store author needs, and internals are in neither.
import { describe, expect, test } from 'vitest';
import * as rootSource from '../src/index.js';
import * as storeSource from '../src/store-api.js';

const ROOT = [
  'SluiceError',
  'createConcurrencyLimiter',
  'createFleetShedder',
  'createLimiter',
  'createThrottledFetch',
  'createUtilizationShedder',
  'deleteLimiterConfig',
  'eventLoopSignal',
  'fixedWindow',
  'gcra',
  'isSluiceError',
  'leakyBucket',
  'parseDuration',
  'parseLimiterConfig',
  'pushBack',
  'readLimiterConfig',
  'removeQuota',
  'ruleFromSpec',
  'ruleSpec',
  'setConfigMode',
  'setConfigRules',
  'setQuota',
  'slidingWindowCounter',
  'slidingWindowLog',
  'tokenBucket',
  'watchConfig',
  'writeLimiterConfig',
];

const STORE = [
  'ALGORITHM_NAMES',
  'EXPIRY_GRACE_MS',
  'Failover',
  'LEASE_ID_PATTERN',
  'MAX_VERBATIM_IDENTITY',
  'NEVER',
  'createFailurePolicy',
  'decide',
  'decideOne',
  'decodeState',
  'describeValue',
  'durationOption',
  'encodeState',
  'evaluate',
  'evaluateLease',
  'fixedWindowStep',
  'gcraStep',
  'identityKey',
  'isPromiseLike',
  'isStepMode',
  'leakyBucketStep',
  'newStepScratch',
  'optionalFunction',
  'rejectUnknownOptions',
  'slidingWindowCounterStep',
  'slidingWindowLogStep',
  'stepRule',
  'stepRuleInto',
  'tokenBucketStep',
];

const INTERNAL = ['ceilDiv', 'STEPS', 'hash32', 'CircuitBreaker'];

const names = (module: object) => Object.keys(module).filter((name) => name !== 'default').sort();

describe('public API', () => {
  test('the root export (src/index.ts) is exactly the application API', () => {
    expect(names(rootSource)).toEqual(ROOT);
  });

  test('the /store export (src/store-api.ts) is exactly the store-author API', () => {
    expect(names(storeSource)).toEqual(STORE);
  });

  test('the two share no runtime name and neither exports an internal', () => {
    expect(ROOT.filter((name) => STORE.includes(name))).toEqual([]);
    for (const name of INTERNAL) {
      expect(ROOT, name).not.toContain(name);
      expect(STORE, name).not.toContain(name);
    }
  });

  test('the built ESM entries (dist/index.js, dist/store.js) export the same names', async () => {
    expect(names(await import('../dist/index.js'))).toEqual(ROOT);
    expect(names(await import('../dist/store.js'))).toEqual(STORE);
  });
});
