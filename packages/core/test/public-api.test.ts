// The runtime surface of @sluice/core, listed name by name so it changes only on purpose: the root export is what
// an application calls to limit requests, `@sluice/core/store` is what a store author needs, the features beside
// the limiter have a subpath each (`/concurrency`, `/shedding`, `/config`, `/analytics`), and internals are in none of them.
import { describe, expect, test } from 'vitest';
import * as analyticsSource from '../src/analytics/index.js';
import * as internalSource from '../src/internal/index.js';
import * as concurrencySource from '../src/concurrency/index.js';
import * as configSource from '../src/config/index.js';
import * as rootSource from '../src/index.js';
import * as sheddingSource from '../src/shedding/index.js';
import * as storeSource from '../src/store/index.js';

const ROOT = [
  'SluiceError',
  'createLimiter',
  'fixedWindow',
  'gcra',
  'isSluiceError',
  'leakyBucket',
  'parseDuration',
  'ruleFromSpec',
  'ruleSpec',
  'slidingWindowCounter',
  'slidingWindowLog',
  'tokenBucket',
];

const STORE = [
  'ALGORITHM_NAMES',
  'EXPIRY_GRACE_MS',
  'FailureAnswer',
  'LEASE_ID_PATTERN',
  'MAX_VERBATIM_IDENTITY',
  'NEVER',
  'createFailurePolicy',
  'decodeState',
  'encodeState',
  'evaluate',
  'evaluateLease',
  'fixedWindowStep',
  'gcraStep',
  'identityKey',
  'isStepOperation',
  'leakyBucketStep',
  'newStepScratch',
  'slidingWindowCounterStep',
  'slidingWindowLogStep',
  'stepRule',
  'stepRuleInto',
  'tokenBucketStep',
];

const CONCURRENCY = ['createConcurrencyLimiter'];

const SHEDDING = ['createEventLoopSignal', 'createFleetShedder', 'createUtilizationShedder'];

const CONFIG = [
  'DENY_CHANGE_MAX',
  'DENY_EXPIRE_MAX',
  'DENY_LOG_LENGTH',
  'addDenyEntries',
  'addDenyEntry',
  'changeText',
  'createAutoDeny',
  'deleteLimiterConfig',
  'denyChangesSince',
  'denyListVersion',
  'entryText',
  'liveDenyList',
  'newEpoch',
  'parseLimiterConfig',
  'readChangeText',
  'readDenyList',
  'readLimiterConfig',
  'removeDenyEntries',
  'removeDenyEntry',
  'removeQuota',
  'replaceDenyEntries',
  'setDenyListMode',
  'setLimiterMode',
  'setLimiterRules',
  'setQuota',
  'stampChangeText',
  'watchConfig',
  'writeLimiterConfig',
];

const ANALYTICS = [
  'ANALYTICS_OUTCOMES',
  'DEFAULT_ANALYTICS_RETENTION',
  'DEFAULT_ANALYTICS_TOP_K',
  'analyticsStoreSettings',
  'createFleetAnalytics',
  'emptyAnalyticsCounts',
  'topEntries',
];

/** The option checks and the timers sluice's own packages share (they import `@sluice/core/internal`), one copy in a bundle. */
const INTERNAL_HELPERS = [
  'MAX_TIMER_MS',
  'MODES',
  'clockOption',
  'describeValue',
  'durationOption',
  'integerOption',
  'isPromiseLike',
  'modeOption',
  'nameOption',
  'optionNames',
  'optionalFunction',
  'positiveInteger',
  'rejectUnknownOptions',
  'requireObject',
  'timerDuration',
  'timers',
  'unref',
];

/** Each entry: its name in dist/, its source module and the names it exports. */
const ENTRIES = [
  { name: 'index', source: rootSource, exported: ROOT },
  { name: 'store', source: storeSource, exported: STORE },
  { name: 'concurrency', source: concurrencySource, exported: CONCURRENCY },
  { name: 'shedding', source: sheddingSource, exported: SHEDDING },
  { name: 'config', source: configSource, exported: CONFIG },
  { name: 'analytics', source: analyticsSource, exported: ANALYTICS },
  { name: 'internal', source: internalSource, exported: INTERNAL_HELPERS },
];

const INTERNAL = ['ceilDiv', 'STEPS', 'hash32', 'CircuitBreaker'];

const names = (module: object) =>
  Object.keys(module)
    .filter((name) => name !== 'default')
    .sort();

describe('public API', () => {
  test('the root export (src/index.ts) is exactly the application API', () => {
    expect(names(rootSource)).toEqual(ROOT);
  });

  test('the /store export (src/store/index.ts) is exactly the store-author API', () => {
    expect(names(storeSource)).toEqual(STORE);
  });

  test('the /concurrency, /shedding, /config, /analytics and /internal exports are exactly their feature', () => {
    expect(names(concurrencySource)).toEqual(CONCURRENCY);
    expect(names(sheddingSource)).toEqual(SHEDDING);
    expect(names(configSource)).toEqual(CONFIG);
    expect(names(analyticsSource)).toEqual(ANALYTICS);
    expect(names(internalSource)).toEqual(INTERNAL_HELPERS);
  });

  test('no two entries share a runtime name and none exports an internal', () => {
    const all = ENTRIES.flatMap(({ exported }) => exported);
    expect(all.filter((name, i) => all.indexOf(name) !== i)).toEqual([]);
    for (const name of INTERNAL) expect(all, name).not.toContain(name);
  });

  test.each(ENTRIES)('the built ESM entry dist/$name.js exports the same names', async ({ name, exported }) => {
    expect(names(await import(`../dist/${name}.js`))).toEqual(exported);
  });
});
