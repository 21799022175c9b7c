/**
 * The runtime configuration document: what parseLimiterConfig accepts and how it words a refusal, and the
 * writers' functions, which check a document exactly as the watcher will before it is stored.
 */
import { describe, expect, test } from 'vitest';
import { gcra } from '../src/index.js';
import {
  deleteLimiterConfig,
  parseLimiterConfig,
  readLimiterConfig,
  removeQuota,
  setLimiterMode,
  setLimiterRules,
  setQuota,
  writeLimiterConfig,
} from '../src/config/index.js';
import { MapConfigSource } from './support/map-config-source.js';

const GCRA = { algorithm: 'gcra', limit: 10, period: '1s' } as const;

describe('parseLimiterConfig', () => {
  test('accepts a full document, as text or object, and keeps what it says', () => {
    const doc = {
      version: 1,
      revision: 3,
      updatedAt: 1_700_000_000_000,
      rules: [GCRA],
      mode: 'shadow',
      quotas: { acme: [{ ...GCRA, limit: 100 }] },
    };
    expect(parseLimiterConfig(JSON.stringify(doc))).toEqual(doc);
    expect(parseLimiterConfig(doc)).toEqual(doc);
    expect(parseLimiterConfig({ version: 1, mode: 'off' })).toEqual({ version: 1, revision: 0, updatedAt: 0, mode: 'off' });
  });

  test.each([
    [{ version: 1, quotas: { acme: [{ ...GCRA, limit: -1 }] } }, /quotas\["acme"\]\[0\]: gcra: limit must be a positive integer, got -1/],
    [{ version: 1, rules: [{ ...GCRA, period: 'soon' }] }, /rules\[0\]: gcra: period must be a duration/],
    [{ version: 1, rules: [{ algorithm: 'tokenBucket' }] }, /rules\[0\]\.algorithm must be one of 'fixed-window'/],
    [{ version: 1, rules: [] }, /rules must be a non-empty array of rules/],
    [{ version: 1, rules: GCRA }, /rules must be a non-empty array of rules .*got an object/],
    [
      { version: 1, rules: [GCRA, { ...GCRA, limit: 5 }] },
      /rules\[1\]: another rule has the id "gcra:1000"; give one of them an explicit "id"/,
    ],
    [{ version: 1, mode: 'disabled' }, /mode must be 'enforce', 'shadow' or 'off', got "disabled"/],
    [{ version: 2, mode: 'off' }, /version must be 1 .*got 2/],
    [{ mode: 'off' }, /version must be 1 .*got undefined/],
    [{ version: 1, mdoe: 'off' }, /unknown option "mdoe"; accepted options are version, revision, updatedAt, rules, mode, quotas/],
    [{ version: 1, quotas: [] }, /quotas must be an object from identity to rules/],
    [{ version: 1, quotas: { '': [GCRA] } }, /quotas: an identity must be a non-empty string/],
    [{ version: 1, quotas: { acme: [] } }, /quotas\["acme"\] must be a non-empty array/],
    [{ version: 1, updatedAt: -5 }, /updatedAt must be a non-negative integer, got -5/],
    ['{"version":1,', /the configuration must be a JSON object, got text that is not JSON/],
    ['[]', /the configuration must be an object .*got an array/],
    [null, /the configuration must be an object/],
  ])('refuses %j, naming the field', (input, message) => {
    expect(() => parseLimiterConfig(input)).toThrow(message);
  });
});

describe('writing', () => {
  test('each write merges its change into the stored document, with the next revision', async () => {
    const source = new MapConfigSource();
    const first = await setLimiterRules(source, 'api', [GCRA]);
    expect(first).toMatchObject({ version: 1, revision: 1, rules: [GCRA] });
    expect(first.updatedAt).toBeGreaterThan(0);
    await setLimiterMode(source, 'api', 'off');
    await setQuota(source, 'api', 'acme', { ...GCRA, limit: 100 });
    await setQuota(source, 'api', 'globex', gcra({ limit: 5, period: '1s' })); // a factory's rule is written as its spec
    expect(await readLimiterConfig(source, 'api')).toEqual({
      version: 1,
      revision: 4,
      updatedAt: expect.any(Number),
      rules: [GCRA],
      mode: 'off',
      quotas: { acme: [{ ...GCRA, limit: 100 }], globex: [{ algorithm: 'gcra', id: 'gcra:1000', limit: 5, period: 1000, burst: 5 }] },
    });
    await removeQuota(source, 'api', 'acme');
    await setLimiterMode(source, 'api', null);
    const last = await removeQuota(source, 'api', 'globex');
    expect(last).toEqual({ version: 1, revision: 7, updatedAt: expect.any(Number), rules: [GCRA] });
    expect(JSON.parse(source.documents.get('api')!)).toEqual(last);
    await deleteLimiterConfig(source, 'api'); // a tombstone: instances return to their code's configuration
    expect(await readLimiterConfig(source, 'api')).toEqual({ version: 1, revision: 8, updatedAt: expect.any(Number), deleted: true });
  });

  test('a bad rule is refused when written, and nothing is stored', async () => {
    const source = new MapConfigSource();
    await setLimiterMode(source, 'api', 'shadow');
    const before = source.documents.get('api');
    await expect(setQuota(source, 'api', 'acme', [{ ...GCRA, limit: -1 }])).rejects.toThrow(
      /quotas\["acme"\]\[0\]: gcra: limit must be a positive integer, got -1/,
    );
    await expect(setLimiterRules(source, 'api', [])).rejects.toThrow(/rules must be a non-empty array/);
    await expect(setLimiterMode(source, 'api', 'of' as never)).rejects.toThrow(/mode must be 'enforce', 'shadow' or 'off', got "of"/);
    await expect(writeLimiterConfig(source, 'api', { modes: 'off' } as never)).rejects.toThrow(
      /writeLimiterConfig: unknown option "modes"/,
    );
    await expect(setQuota(source, 'api', '', [GCRA])).rejects.toThrow(/identity must be a non-empty string/);
    await expect(setLimiterMode(source, '', 'off')).rejects.toThrow(/name must be 1 to 64 characters of letters, digits/);
    expect(source.documents.get('api')).toBe(before);
  });

  test('a stored document that is not valid is reported on read and not written over by a partial change', async () => {
    const source = new MapConfigSource();
    source.documents.set('api', '{"version":1,"mode":"of"}');
    await expect(readLimiterConfig(source, 'api')).rejects.toThrow(/the stored configuration of "api" is not valid .*mode must be/);
    await expect(setLimiterMode(source, 'api', 'off')).rejects.toThrow(/not valid/);
    await deleteLimiterConfig(source, 'api'); // the way out: start over (over a tombstone of revision 1)
    expect((await setLimiterMode(source, 'api', 'off')).revision).toBe(2);
  });
});
