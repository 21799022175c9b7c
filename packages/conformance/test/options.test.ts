import { isSluiceError } from '@sluice/core';
import { describe, expect, it } from 'vitest';
import { resolveOptions, type StoreConformanceOptions } from '../src/options.js';
import { ReferenceStore } from '../src/reference-store.js';
import { clockOffset } from '../src/time.js';

const valid: StoreConformanceOptions<ReferenceStore> = { name: 'reference', createStore: () => new ReferenceStore(), clock: 'client' };

function codeAndMessage(options: unknown): [string | undefined, string] {
  try {
    resolveOptions(options as StoreConformanceOptions);
  } catch (error) {
    expect(isSluiceError(error)).toBe(true);
    return [(error as { code: string }).code, (error as Error).message];
  }
  throw new Error('expected resolveOptions to throw');
}

describe('describeStoreConformance options', () => {
  it('fills in the defaults', () => {
    const resolved = resolveOptions(valid);
    expect(resolved).toMatchObject({ synchronous: false, storeScope: 'test', keyPrefix: 'conformance', timeoutMs: 5000 });
    expect(resolved.inspectKeys).toBeUndefined();
    expect(resolved.keyExpiry).toBe('client');
    expect(resolveOptions({ ...valid, clock: 'store' }).keyExpiry).toBe('store');
  });

  it('requireAll accepts a run that skips nothing: inspectKeys, take, reserve and leases', () => {
    const complete = resolveOptions({
      ...valid,
      requireAll: true,
      inspectKeys: () => [],
      keyExpiry: 'store',
      capabilities: { operations: ['take', 'reserve'], leases: true },
    });
    expect(complete).toMatchObject({ keyExpiry: 'store', leases: true, operations: ['take', 'reserve'] });
  });

  it("takes timeout as a duration: '2s' and 2000 alike", () => {
    expect(resolveOptions({ ...valid, timeout: '2s' }).timeoutMs).toBe(2000);
    expect(resolveOptions({ ...valid, timeout: 2000 }).timeoutMs).toBe(2000);
  });

  it.each([
    [{ ...valid, name: '' }, 'INVALID_OPTION', 'name must be a non-empty string'],
    [{ ...valid, createStore: undefined }, 'INVALID_OPTION', 'createStore must be a function'],
    [{ ...valid, clock: 'server' }, 'INVALID_OPTION', `clock must be 'client' or 'store', got "server"`],
    [{ ...valid, capabilities: { synchronous: 'yes' } }, 'INVALID_OPTION', 'capabilities.synchronous must be true or false'],
    [{ ...valid, storeScope: 'file' }, 'INVALID_OPTION', `storeScope must be 'test' or 'suite'`],
    [{ ...valid, keyPrefix: 'has space' }, 'INVALID_OPTION', 'keyPrefix must be 1 to 40 characters'],
    [{ ...valid, timeout: 0 }, 'INVALID_OPTION', 'timeout must be a duration from 1 to 2147483647 ms'],
    [
      { ...valid, timeout: 'soon' },
      'INVALID_OPTION',
      "timeout must be a duration from 1 to 2147483647 ms (a whole number of ms or a string like '250ms'",
    ],
    [{ ...valid, timeoutMs: 5000 }, 'UNKNOWN_OPTION', 'unknown option "timeoutMs"; accepted options are'],
    [{ ...valid, inspectKeys: 'keys' }, 'INVALID_OPTION', 'inspectKeys must be a function'],
    [{ ...valid, clok: 'client' }, 'UNKNOWN_OPTION', 'unknown option "clok"'],
    [{ ...valid, keyExpiry: 'server' }, 'INVALID_OPTION', `keyExpiry must be 'client' or 'store', got "server"`],
    [{ ...valid, clock: 'store', keyExpiry: 'client' }, 'INVALID_OPTION', "keyExpiry 'client' needs clock: 'client'"],
    [{ ...valid, requireAll: 'yes' }, 'INVALID_OPTION', 'requireAll must be true or false'],
    [
      { ...valid, requireAll: true },
      'INVALID_OPTION',
      "requireAll is true, so no test may be skipped, but the run lacks inspectKeys (the tests that read the store's keys), capabilities.operations 'take' (its vectors), capabilities.operations 'reserve' (its vectors), capabilities.leases (the lease vectors)",
    ],
    [
      { ...valid, requireAll: true, inspectKeys: () => [], capabilities: { operations: ['take'], leases: true } },
      'INVALID_OPTION',
      "requireAll is true, so no test may be skipped, but the run lacks capabilities.operations 'reserve' (its vectors)",
    ],
    [null, 'INVALID_OPTION', 'options must be an object'],
  ])('rejects %j with a message naming the field', (options, code, text) => {
    const [actualCode, message] = codeAndMessage(options);
    expect(actualCode).toBe(code);
    expect(message).toContain(`describeStoreConformance: ${text}`);
  });

  it('reads clock readings the way the vectors write them', () => {
    expect(clockOffset('0:01')).toBe(1_000);
    expect(clockOffset('1:24.001')).toBe(84_001);
    expect(clockOffset('1440:00')).toBe(86_400_000);
    expect(() => clockOffset('1:5')).toThrow(/bad clock reading/);
  });
});
