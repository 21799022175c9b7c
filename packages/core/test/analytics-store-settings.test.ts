/**
 * The options every analytics store takes, checked in one place: defaults, and an INVALID_OPTION naming the store
 * and the field for each bad value or unknown option.
 */
import { describe, expect, test } from 'vitest';
import { analyticsStoreSettings, DEFAULT_ANALYTICS_TOP_K } from '../src/analytics/index.js';

describe('analyticsStoreSettings', () => {
  test('defaults: 15 minutes of retention, the default top list, Date.now; a prefix only where the store takes one', () => {
    const plain = analyticsStoreSettings({}, 'someStore');
    expect(plain).toMatchObject({ prefix: undefined, retentionSeconds: 900, topK: DEFAULT_ANALYTICS_TOP_K });
    expect(plain.now).toBe(Date.now);
    expect(analyticsStoreSettings({}, 'someStore', { prefix: true }).prefix).toBe('sluice');
    const clock = () => 5;
    expect(analyticsStoreSettings({ prefix: 'app', retention: '1500ms', topK: 3, now: clock }, 'someStore', { prefix: true })).toEqual({
      prefix: 'app',
      retentionSeconds: 2,
      topK: 3,
      now: clock,
    });
  });

  test.each([
    [null, {}, /someStore: options must be an object, got null/],
    [{ prefix: 'app' }, {}, /someStore.*prefix/],
    [{ prefix: '' }, { prefix: true }, /someStore: prefix must be a non-empty string, got ""/],
    [{ retention: '10ms' }, {}, /someStore: retention/],
    [{ retention: 'soon' }, {}, /someStore: retention/],
    [{ topK: 0 }, {}, /someStore: topK must be a positive integer, got 0/],
    [{ topK: 2.5 }, {}, /someStore: topK must be a positive integer, got 2.5/],
    [{ now: 5 }, {}, /someStore: now/],
    [{ ttl: '1m' }, {}, /someStore.*ttl/],
  ])('%j (%j) is refused with INVALID_OPTION naming the store and the field', (options, how, message) => {
    expect(() => analyticsStoreSettings(options, 'someStore', how)).toThrow(message);
    expect(() => analyticsStoreSettings(options, 'someStore', how)).toThrow(
      expect.objectContaining({ code: expect.stringMatching(/INVALID_OPTION|UNKNOWN_OPTION/) }),
    );
  });
});
