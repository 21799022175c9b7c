// The helpers are compiled from core's source; this checks the build (tsup.config.ts) kept core's SluiceError out of
// it, so an error a helper throws in another package is the class a user imports from @sluice/core.
import { readFileSync } from 'node:fs';
import { SluiceError } from '@sluice/core';
import { describe, expect, test } from 'vitest';
import { durationOption, optionalFunction, rejectUnknownOptions } from '../dist/index.js';

describe("the built helpers throw @sluice/core's SluiceError", () => {
  test('an unknown option, a callback that is not a function and a bad duration are all instanceof SluiceError', () => {
    expect(() => rejectUnknownOptions({ maxkey: 1 }, ['maxKeys'], 'memoryStore')).toThrow(SluiceError);
    expect(() => optionalFunction(1, 'onDeny', '(request) => void')).toThrow(SluiceError);
    expect(() => durationOption('soon', 'timeout')).toThrow(SluiceError);
  });

  test('neither build defines a class of its own', () => {
    for (const file of ['index.js', 'index.cjs']) {
      expect(readFileSync(new URL(`../dist/${file}`, import.meta.url), 'utf8')).not.toMatch(/class \w*SluiceError/);
    }
  });
});
