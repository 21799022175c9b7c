/**
 * watchConfig and the deny list's own mode (`denyMode` in the document, `limiter.denyMode`): the kill switch turns
 * off limits, not the list, and the list is switched on its own. Fake timers: nothing sleeps.
 */
import { afterEach, beforeEach, describe, expect, test, vi } from 'vitest';
import { createLimiter, fixedWindow, type Limiter } from '../src/index.js';
import { addDenyEntry, parseLimiterConfig, setLimiterMode, setDenyListMode, watchConfig, writeLimiterConfig } from '../src/config/index.js';
import { MapStore } from './support/map-store.js';
import { MapConfigSource } from './support/map-config-source.js';

beforeEach(() => void vi.useFakeTimers());
afterEach(() => void vi.useRealTimers());

function limiter(): Limiter {
  return createLimiter({ store: new MapStore(), rules: fixedWindow({ id: 'w', limit: 2, window: '1h' }), name: 'api' });
}

describe('watchConfig: the deny mode', () => {
  test("applies the stored denyMode apart from the mode: the kill switch leaves the list's mode alone", async () => {
    const source = new MapConfigSource();
    await addDenyEntry(source, 'api', { match: 'user:1' });
    const l = limiter();
    const watcher = watchConfig(l, source, { onWarning: (w) => expect.fail(w.message) });
    await watcher.ready;
    expect([l.mode, l.denyMode, l.deny.length]).toEqual(['enforce', 'enforce', 1]);
    await setLimiterMode(source, 'api', 'off');
    await watcher.refresh();
    expect([l.mode, l.denyMode, l.deny.length]).toEqual(['off', 'enforce', 1]);
    await setDenyListMode(source, 'api', 'shadow');
    await watcher.refresh();
    expect([l.mode, l.denyMode]).toEqual(['off', 'shadow']);
    expect(watcher.config).toMatchObject({ mode: 'off', denyMode: 'shadow' });
    await setDenyListMode(source, 'api', 'off');
    await watcher.refresh();
    expect(l.denyMode).toBe('off');
    await watcher.stop();
  });

  test("a document without denyMode returns the limiter to the code's deny mode", async () => {
    const source = new MapConfigSource();
    const l = limiter();
    l.configure({ denyMode: 'shadow' });
    const watcher = watchConfig(l, source);
    await setDenyListMode(source, 'api', 'enforce');
    await watcher.refresh();
    expect(l.denyMode).toBe('enforce');
    await setDenyListMode(source, 'api', null);
    await watcher.refresh();
    expect(l.denyMode).toBe('shadow');
    await watcher.stop();
  });

  test('a bad denyMode is refused by the writers and by the document check, naming the field', async () => {
    const source = new MapConfigSource();
    await expect(setDenyListMode(source, 'api', 'dry-run' as never)).rejects.toThrow(
      /denyMode must be 'enforce', 'shadow' or 'off', got "dry-run"/,
    );
    await expect(writeLimiterConfig(source, 'api', { denyMode: 1 as never })).rejects.toThrow(/denyMode must be/);
    expect(source.documents.size).toBe(0);
    expect(() => parseLimiterConfig({ version: 1, denyMode: 'on' })).toThrow(/denyMode must be 'enforce', 'shadow' or 'off', got "on"/);
  });
});
