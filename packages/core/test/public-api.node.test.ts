/// <reference types="node" />
// The CommonJS build of both entries: the same names as the ESM build, and one copy of the code they share (tsup
// splits it into a chunk), so an error thrown by a /store helper is an `instanceof SluiceError` of the root.
import { createRequire } from 'node:module';
import { describe, expect, test } from 'vitest';

const require = createRequire(import.meta.url);
const names = (module: object) => Object.keys(module).filter((name) => name !== 'default' && name !== '__esModule').sort();

describe('public API (CommonJS build)', () => {
  test('dist/index.cjs and dist/store.cjs export what dist/index.js and dist/store.js export', async () => {
    expect(names(require('../dist/index.cjs'))).toEqual(names(await import('../dist/index.js')));
    expect(names(require('../dist/store.cjs'))).toEqual(names(await import('../dist/store.js')));
  });

  test.each(['cjs', 'js'])('a /store helper throws the root SluiceError class (dist/*.%s)', async (extension) => {
    const root = extension === 'cjs' ? require('../dist/index.cjs') : await import('../dist/index.js');
    const store = extension === 'cjs' ? require('../dist/store.cjs') : await import('../dist/store.js');
    let thrown: unknown;
    try {
      store.rejectUnknownOptions({ nope: 1 }, ['known'], 'test');
    } catch (error) {
      thrown = error;
    }
    expect(thrown).toBeInstanceOf(root.SluiceError);
  });
});
