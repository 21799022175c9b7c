/// <reference types="node" />
// The CommonJS build of every entry: the same names as the ESM build, and one copy of the code they share (tsup
// splits it into chunks), so an error thrown by a subpath's function is an `instanceof SluiceError` of the root.
import { createRequire } from 'node:module';
import { describe, expect, test } from 'vitest';

const require = createRequire(import.meta.url);
const names = (module: object) =>
  Object.keys(module)
    .filter((name) => name !== 'default' && name !== '__esModule')
    .sort();

const ENTRIES = ['index', 'store', 'concurrency', 'shedding', 'config', 'analytics', 'internal'];

/** A call into each subpath that throws a SluiceError (an option the function does not know, or a bad document). */
const THROWERS: Record<string, (entry: Record<string, (...args: unknown[]) => unknown>) => unknown> = {
  store: (store) => store.createFailurePolicy!({ nope: 1 }),
  concurrency: (concurrency) => concurrency.createConcurrencyLimiter!({ nope: 1 }),
  shedding: (shedding) => shedding.createUtilizationShedder!({ nope: 1 }),
  config: (config) => config.parseLimiterConfig!('not json'),
  analytics: (analytics) => analytics.createFleetAnalytics!({ nope: 1 }),
  internal: (internal) => internal.rejectUnknownOptions!({ nope: 1 }, [], 'someFunction'),
};

describe('public API (CommonJS build)', () => {
  test.each(ENTRIES)('dist/%s.cjs exports what dist/%s.js exports', async (entry) => {
    expect(names(require(`../dist/${entry}.cjs`))).toEqual(names(await import(`../dist/${entry}.js`)));
  });

  for (const extension of ['cjs', 'js']) {
    test.each(Object.keys(THROWERS))(`a /%s function throws the root SluiceError class (dist/*.${extension})`, async (entry) => {
      const load = (name: string) => (extension === 'cjs' ? require(`../dist/${name}.cjs`) : import(`../dist/${name}.js`));
      const root = await load('index');
      let thrown: unknown;
      try {
        THROWERS[entry]!(await load(entry));
      } catch (error) {
        thrown = error;
      }
      expect(thrown).toBeInstanceOf(root.SluiceError);
    });
  }
});
