/**
 * The dashboard telling a configuration document the store lost (gone without a tombstone: a store restarted empty)
 * from one an operator deleted (a tombstone), on the memory stores: the lost one is shown with the revision instances
 * keep, listed though the store no longer holds it, and written back by `restore` only while none is stored, its
 * deny entries into the source's deny structure; and on a source without one, the deny list kept in the document.
 */
import {
  addDenyEntries,
  deleteLimiterConfig,
  readDenyList,
  readLimiterConfig,
  setLimiterMode,
  type ConfigSource,
} from '@sluice/core/config';
import { memoryConfigSource } from '@sluice/memory';
import { describe, expect, test } from 'vitest';
import { FleetView } from '../src/dashboard/fleet-view.js';

function setup() {
  const source = memoryConfigSource();
  const names = new Set<string>();
  const view = new FleetView({ source, analytics: undefined, listConfigNames: async () => [...names] });
  return { source, names, view };
}

describe('the dashboard and a lost configuration', () => {
  test('a document gone without a tombstone is shown as lost and restored by the restore action', async () => {
    const { source, names, view } = setup();
    names.add('api');
    await setLimiterMode(source, 'api', 'shadow');
    await addDenyEntries(source, 'api', [{ match: 'user:1' }, { match: '203.0.113.0/24', reason: 'scraper' }]);
    const written = await readLimiterConfig(source, 'api');
    expect((await view.state([])).limiters).toMatchObject([{ name: 'api', config: { revision: 1, deny: written!.deny } }]);
    expect((await view.state([])).limiters[0]).not.toHaveProperty('lost');
    // The store restarted empty: the document and the deny structure are both gone.
    source.remove('api');
    source.deny.forget('api');
    names.delete('api'); // a SCAN of the restarted store no longer finds it
    expect((await view.state([])).limiters).toMatchObject([{ name: 'api', config: null, lost: { revision: 1, denyEntries: 2 } }]);
    expect(await view.act({ action: 'restore', name: 'api' })).toEqual(written);
    expect(await readLimiterConfig(source, 'api')).toEqual(written);
    // The entries are back in the deny structure, where instances follow them; the document holds no deny field.
    expect([...(await readDenyList(source.deny, 'api')).keys()].sort()).toEqual(['203.0.113.0/24', 'user:1']);
    expect(JSON.parse((await source.read('api'))!)).not.toHaveProperty('deny');
    expect((await view.state([])).limiters[0]).not.toHaveProperty('lost');
  });

  test('a tombstone is not a loss; restore refuses when it has no copy or a document is stored again', async () => {
    const { source, names, view } = setup();
    names.add('api');
    await setLimiterMode(source, 'api', 'off');
    await view.state([]);
    await deleteLimiterConfig(source, 'api');
    expect((await view.state([])).limiters).toMatchObject([{ name: 'api', config: { deleted: true } }]);
    expect((await view.state([])).limiters[0]).not.toHaveProperty('lost');
    await expect(view.act({ action: 'restore', name: 'api' })).rejects.toThrow(/the dashboard has no copy of the configuration of "api"/);
    await setLimiterMode(source, 'api', 'off');
    await view.state([]);
    source.remove('api');
    await view.state([]);
    await setLimiterMode(source, 'api', 'enforce'); // an operator wrote a new one since the loss
    await expect(view.act({ action: 'restore', name: 'api' })).rejects.toThrow(/is stored again .*nothing was restored/);
    expect((await readLimiterConfig(source, 'api'))?.mode).toBe('enforce');
  });
});

describe('the dashboard on a config source without a deny structure (the list in the document)', () => {
  /** The memory source as a source written for an older release would be: the document alone, no `deny`. */
  function documentOnly(): ConfigSource & { remove(name: string): void } {
    const full = memoryConfigSource();
    return {
      read: (name) => full.read(name),
      write: (name, text) => full.write(name, text),
      remove: (name) => full.remove(name),
      replace: (name, revision, text) => full.replace(name, revision, text),
    };
  }

  test('addDeny answers the document holding the entry; a lost document is restored with its deny field', async () => {
    const source = documentOnly();
    const view = new FleetView({ source, analytics: undefined, listConfigNames: async () => ['api'] });
    const added = await view.act({ action: 'addDeny', name: 'api', match: 'user:1', reason: 'scraper' });
    expect(added).toMatchObject({ revision: 1, deny: [{ match: 'user:1', reason: 'scraper' }] });
    expect(JSON.parse((await source.read('api'))!).deny).toMatchObject([{ match: 'user:1' }]);
    await view.state([]);
    source.remove('api');
    expect((await view.state([])).limiters).toMatchObject([{ name: 'api', config: null, lost: { revision: 1, denyEntries: 1 } }]);
    expect(await view.act({ action: 'restore', name: 'api' })).toEqual(added);
    expect(JSON.parse((await source.read('api'))!)).toEqual(added);
  });
});
