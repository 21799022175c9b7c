/**
 * The option check and the value description every package uses (stores, http, the adapters, conformance, through
 * `@sluice/core/internal`): written once here, so every "unknown option" and every "got …" reads the same wherever
 * it is raised.
 */
import { describe, expect, test } from 'vitest';
import { isSluiceError } from '../src/index.js';
import { describe as describeValue } from '../src/shared/describe.js';
import { isPromiseLike } from '../src/shared/promise.js';
import { optionalFunction, rejectUnknownOptions } from '../src/shared/validate.js';

describe('rejectUnknownOptions', () => {
  test('a typo is UNKNOWN_OPTION naming where, the option and every accepted one', () => {
    let error: unknown;
    try {
      rejectUnknownOptions({ maxKeys: 5, maxkey: 1 }, ['maxKeys'], 'memoryStore');
    } catch (caught) {
      error = caught;
    }
    expect(isSluiceError(error) && error.code).toBe('UNKNOWN_OPTION');
    expect((error as Error).message).toBe('[sluice] memoryStore: unknown option "maxkey"; accepted options are maxKeys');
  });

  test('known options, and no options at all, pass', () => {
    expect(() => rejectUnknownOptions({ a: 1, b: undefined }, ['a', 'b', 'c'], 'x')).not.toThrow();
    expect(() => rejectUnknownOptions({}, [], 'x')).not.toThrow();
  });

  test('a key named like an Object.prototype member is still an unknown option', () => {
    expect(() => rejectUnknownOptions({ toString: 1 }, ['clock'], 'x')).toThrow(
      /^\[sluice\] x: unknown option "toString"; accepted options are clock$/,
    );
  });

  test('inherited keys are not options; own symbol keys are not read', () => {
    const options = Object.assign(Object.create({ inherited: 1 }) as object, { a: 1, [Symbol('s')]: 2 });
    expect(() => rejectUnknownOptions(options, ['a'], 'x')).not.toThrow();
  });
});

describe('describeValue', () => {
  test('strings are quoted and cut at 40 characters by default, or at the length given', () => {
    const long = 'x'.repeat(70);
    expect(describeValue('abc')).toBe('"abc"');
    expect(describeValue(long)).toBe(`"${'x'.repeat(40)}…"`);
    expect(describeValue(long, 60)).toBe(`"${'x'.repeat(60)}…"`);
  });

  test('primitives as themselves, anything else by its kind, never throwing on exotic input', () => {
    expect([1.5, true, null, undefined, 10n].map((v) => describeValue(v))).toEqual(['1.5', 'true', 'null', 'undefined', '10n']);
    expect(describeValue([1])).toBe('an array');
    expect(describeValue(Object.create(null))).toBe('an object');
    expect(describeValue(() => 1)).toBe('function');
    expect(describeValue(Symbol('s'))).toBe('symbol');
  });
});

describe('optionalFunction', () => {
  test('undefined and functions pass through; anything else is INVALID_OPTION showing the call it should take', () => {
    const hook = () => true;
    expect(optionalFunction(undefined, 'skip', '(request) => boolean')).toBeUndefined();
    expect(optionalFunction(hook, 'skip', '(request) => boolean')).toBe(hook);
    expect(() => optionalFunction('yes' as never, 'skip', '(request) => boolean')).toThrow(
      expect.objectContaining({ code: 'INVALID_OPTION', message: '[sluice] skip must be a function (request) => boolean, got "yes"' }),
    );
  });
});

describe('isPromiseLike', () => {
  test('any thenable is a promise; answers, null and objects with a non-function then are not', () => {
    expect(isPromiseLike(Promise.resolve(1))).toBe(true);
    expect(isPromiseLike({ then: () => undefined })).toBe(true);
    expect([1, null, undefined, {}, { then: 1 }, 'then'].map((v) => isPromiseLike(v))).toEqual([false, false, false, false, false, false]);
  });
});
