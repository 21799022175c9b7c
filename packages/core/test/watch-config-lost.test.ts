/**
 * watchConfig when the stored document disappears: a store restarted empty (or a key evicted, or deleted by hand)
 * must not un-deny every client or lift every quota, so the last configuration applied stays, with one warning; an
 * operator's deletion is a tombstone (deleteLimiterConfig), on which instances do return to their code's
 * configuration. Fake timers: nothing sleeps.
 */
import { afterEach, beforeEach, describe, expect, test, vi } from 'vitest';
import { createLimiter, fixedWindow, type Limiter } from '../src/index.js';
import {
  addDenyEntry,
  deleteLimiterConfig,
  parseLimiterConfig,
  readLimiterConfig,
  setLimiterMode,
  setQuota,
  watchConfig,
  type ConfigWarning,
} from '../src/config/index.js';
import { MapStore } from './support/map-store.js';
import { MapConfigSource } from './support/map-config-source.js';

const spec = (limit: number) => ({ algorithm: 'fixed-window', id: 'w', limit, window: '1h' }) as const;

let warnings: ConfigWarning[];
beforeEach(() => {
  vi.useFakeTimers();
  warnings = [];
});
afterEach(() => void vi.useRealTimers());

function limiter(): Limiter {
  return createLimiter({ store: new MapStore(), rules: fixedWindow({ id: 'w', limit: 2, window: '1h' }), name: 'api' });
}

/** A source holding a deny entry, a mode and a quota, and a watcher that has applied them. */
async function watched() {
  const source = new MapConfigSource();
  await addDenyEntry(source, 'api', { match: 'user:scraper', reason: 'scraper' });
  await setLimiterMode(source, 'api', 'shadow');
  await setQuota(source, 'api', 'acme', spec(9));
  const l = limiter();
  const watcher = watchConfig(l, source, { refresh: '1s', onWarning: (w) => void warnings.push(w) });
  await watcher.ready;
  expect([l.deny.map((e) => e.match), l.mode, l.quotas.get('acme')?.[0]?.limit]).toEqual([['user:scraper'], 'shadow', 9]);
  return { source, l, watcher };
}

describe('watchConfig: a document that disappears', () => {
  test('gone without a tombstone (the store restarted empty): the deny list, mode and quotas stay, with one warning', async () => {
    const { source, l, watcher } = await watched();
    source.documents.clear(); // what a redis-server restarted without persistence holds
    await watcher.refresh();
    await vi.advanceTimersByTimeAsync(10_000); // ten more periodic reads of the empty store
    expect([l.deny.map((e) => e.match), l.mode, l.quotas.get('acme')?.[0]?.limit]).toEqual([['user:scraper'], 'shadow', 9]);
    expect(watcher.config?.revision).toBe(3);
    expect(warnings.map((w) => w.code)).toEqual(['document_lost']);
    expect(warnings[0]!.message).toMatch(
      /watchConfig\("api"\): the stored configuration is gone without being deleted .*keeping revision 3 and its 1 deny entry: restore it \(sluice config import\)/,
    );
    await watcher.stop();
  });

  test('a document restored after the loss applies again, and a new loss warns again', async () => {
    const { source, l, watcher } = await watched();
    const text = source.documents.get('api')!;
    source.remove('api');
    await watcher.refresh();
    source.write('api', text); // `sluice config import` of the exported document
    await watcher.refresh();
    await setLimiterMode(source, 'api', 'enforce');
    await watcher.refresh();
    expect([l.mode, l.deny.length]).toEqual(['enforce', 1]);
    source.remove('api');
    await watcher.refresh();
    expect([l.mode, l.deny.length]).toEqual(['enforce', 1]);
    expect(warnings.map((w) => w.code)).toEqual(['document_lost', 'document_lost']);
    await watcher.stop();
  });

  test("deleted on purpose (a tombstone): the code's configuration, no warning; the next write continues its revisions", async () => {
    const { source, l, watcher } = await watched();
    await deleteLimiterConfig(source, 'api');
    expect(JSON.parse(source.documents.get('api')!)).toEqual({ version: 1, revision: 4, updatedAt: expect.any(Number), deleted: true });
    await watcher.refresh();
    expect([l.deny, l.mode, l.quotas.size]).toEqual([[], 'enforce', 0]);
    expect(watcher.config).toBeUndefined();
    expect(await readLimiterConfig(source, 'api')).toMatchObject({ revision: 4, deleted: true });
    // After a tombstone, a loss of the store has nothing to keep: nothing is applied, nothing to warn about.
    source.documents.clear();
    await watcher.refresh();
    expect(warnings).toEqual([]);
    await deleteLimiterConfig(source, 'api');
    const next = await addDenyEntry(source, 'api', { match: 'user:2' });
    expect(next).toEqual({ entries: [expect.objectContaining({ match: 'user:2' })], revision: 2, size: 1 });
    expect(JSON.parse(source.documents.get('api')!)).toEqual({
      version: 1,
      revision: 2,
      updatedAt: expect.any(Number),
      deny: [expect.objectContaining({ match: 'user:2' })],
    });
    await watcher.stop();
  });

  test('a watcher that starts on an empty store applies its code and warns of nothing', async () => {
    const source = new MapConfigSource();
    const l = limiter();
    const watcher = watchConfig(l, source, { onWarning: (w) => void warnings.push(w) });
    await watcher.ready;
    await vi.advanceTimersByTimeAsync(3_000);
    expect([l.deny, l.mode, warnings]).toEqual([[], 'enforce', []]);
    await watcher.stop();
  });

  test('a tombstone holds nothing else; deleteLimiterConfig writes over a stored document that is not valid', async () => {
    expect(() => parseLimiterConfig({ version: 1, revision: 2, deleted: true, mode: 'off' })).toThrow(
      /a deleted configuration \("deleted": true\) holds only version, revision and updatedAt, got "mode" too/,
    );
    expect(() => parseLimiterConfig({ version: 1, deleted: false })).toThrow(/deleted must be true \(a tombstone\) or absent, got false/);
    const source = new MapConfigSource();
    source.documents.set('api', '{"version":1,"mode":"of"}');
    await deleteLimiterConfig(source, 'api');
    expect(JSON.parse(source.documents.get('api')!)).toMatchObject({ revision: 1, deleted: true });
    expect((await setLimiterMode(source, 'api', 'off')).revision).toBe(2);
  });
});
