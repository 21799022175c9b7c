/**
 * watchConfig over the memory config source's deny structure: each change applies as the entries it names (the
 * limiter's list moves one version along its lineage), gaps are read from the log, a list the log no longer
 * reaches is read whole, a lost structure keeps the list, a tombstone returns to the code's list, a document's old
 * deny field is moved into the structure, and an entry written by something else is skipped with one warning.
 */
import { createLimiter, fixedWindow, type Limiter } from '@sluice/core';
import {
  DENY_LOG_LENGTH,
  addDenyEntries,
  addDenyEntry,
  deleteLimiterConfig,
  denyListVersion,
  readLimiterConfig,
  removeDenyEntry,
  replaceDenyEntries,
  watchConfig,
  type ConfigWarning,
} from '@sluice/core/config';
import { describe, expect, test } from 'vitest';
import { memoryConfigSource, memoryStore } from '../src/index.js';

function setup(code: { deny?: { match: string }[] } = {}) {
  const source = memoryConfigSource();
  const limiter: Limiter = createLimiter({ name: 'api', store: memoryStore(), rules: fixedWindow({ limit: 5, window: '1s' }) });
  if (code.deny !== undefined) limiter.configure({ deny: code.deny });
  const warnings: ConfigWarning[] = [];
  const watcher = watchConfig(limiter, source, { onWarning: (warning) => void warnings.push(warning) });
  return { source, limiter, warnings, watcher };
}
const matches = (limiter: Limiter) => limiter.deny.map((entry) => entry.match).sort();
/** Pushed changes apply a timer turn after they arrive. */
const timers = globalThis as unknown as { setTimeout(callback: () => void, ms: number): unknown };
const turn = () => new Promise<void>((resolve) => void timers.setTimeout(resolve, 5));

describe('watchConfig over a deny structure', () => {
  test('a pushed change applies at once, as the next version of the same lineage, without a read', async () => {
    const { source, limiter, watcher, warnings } = setup();
    await watcher.ready;
    await addDenyEntries(source, 'api', [{ match: 'user:1' }, { match: '203.0.113.0/24' }]);
    await turn();
    expect(matches(limiter)).toEqual(['203.0.113.0/24', 'user:1']);
    const before = denyListVersion(limiter.deny)!;
    let reads = 0;
    const readChanges = source.deny.readChanges.bind(source.deny);
    source.deny.readChanges = (...args) => (reads++, readChanges(...args));
    await addDenyEntry(source, 'api', { match: 'user:2' });
    expect(await removeDenyEntry(source, 'api', 'user:1')).toBe(true);
    expect(await removeDenyEntry(source, 'api', 'user:1')).toBe(false);
    await turn();
    expect(matches(limiter)).toEqual(['203.0.113.0/24', 'user:2']);
    expect(reads).toBe(0);
    const after = denyListVersion(limiter.deny)!;
    expect(after.lineage).toBe(before.lineage);
    // Two changes changed the list; the removal of an entry no longer held kept the limiter's array as it was.
    expect(after.version).toBe(before.version + 2);
    expect(warnings).toEqual([]);
    await watcher.stop();
  });

  test('changes missed while unsubscribed are read from the log; a list the log no longer reaches is read whole', async () => {
    const { source, watcher } = setup();
    await watcher.ready;
    await addDenyEntry(source, 'api', { match: 'user:0' });
    await watcher.stop();
    const follower = createLimiter({ name: 'api', store: memoryStore(), rules: fixedWindow({ limit: 5, window: '1s' }) });
    const quiet = watchConfig(follower, source, { refresh: '1h' });
    await quiet.ready;
    await quiet.stop(); // no pushes from here on
    const catching = watchConfig(
      follower,
      { read: source.read, write: source.write, remove: source.remove, deny: { ...source.deny, subscribe: undefined } },
      { refresh: '1h' },
    );
    await catching.ready;
    for (let i = 1; i <= 10; i++) await addDenyEntry(source, 'api', { match: `user:${i}` });
    await catching.refresh();
    expect(follower.deny).toHaveLength(11);
    for (let i = 11; i <= DENY_LOG_LENGTH + 20; i++) await source.deny.change('api', { add: [{ match: `user:${i}` }], remove: ['user:0'] });
    await catching.refresh();
    expect(follower.deny).toHaveLength(DENY_LOG_LENGTH + 20);
    expect(follower.deny.some((entry) => entry.match === 'user:0')).toBe(false);
    await catching.stop();
  });

  test('a structure lost by the store keeps the list, with one warning; a tombstone returns to the code list', async () => {
    const { source, limiter, watcher, warnings } = setup({ deny: [{ match: 'code:1' }] });
    await watcher.ready;
    await addDenyEntry(source, 'api', { match: 'user:1' });
    await turn();
    expect(matches(limiter)).toEqual(['user:1']);
    source.deny.forget('api');
    await watcher.refresh();
    await watcher.refresh();
    expect(matches(limiter)).toEqual(['user:1']);
    expect(warnings.map((warning) => warning.code)).toEqual(['document_lost']);
    await deleteLimiterConfig(source, 'api');
    await watcher.refresh();
    expect(matches(limiter)).toEqual(['code:1']);
    await addDenyEntry(source, 'api', { match: 'user:9' });
    await watcher.refresh();
    expect(matches(limiter)).toEqual(['user:9']);
    await watcher.stop();
  });

  test("a document's old deny field is moved into the structure by the first write, and readLimiterConfig shows the structure's list", async () => {
    const { source, limiter, watcher } = setup();
    source.write('api', JSON.stringify({ version: 1, revision: 3, updatedAt: 1, mode: 'shadow', deny: [{ match: 'old:1' }] }));
    await watcher.ready;
    await watcher.refresh();
    expect(matches(limiter)).toEqual(['old:1']);
    await addDenyEntry(source, 'api', { match: 'new:1' });
    await watcher.refresh();
    expect(matches(limiter)).toEqual(['new:1', 'old:1']);
    const stored = JSON.parse(source.read('api')!);
    expect(stored.deny).toBeUndefined();
    expect(stored.mode).toBe('shadow');
    expect((await readLimiterConfig(source, 'api'))?.deny?.map((entry) => entry.match).sort()).toEqual(['new:1', 'old:1']);
    await replaceDenyEntries(source, 'api', [{ match: 'new:1' }, { match: 'new:2' }]);
    await turn();
    expect(matches(limiter)).toEqual(['new:1', 'new:2']);
    await watcher.stop();
  });

  test('an entry written into the structure by something else is skipped with one warning; the rest applies', async () => {
    const { source, limiter, watcher, warnings } = setup();
    await watcher.ready;
    await source.deny.change('api', { add: [{ match: 'user:1' }, { match: ' bad' } as never, { match: 'user:2', until: 9e15 } as never] });
    await turn();
    expect(matches(limiter)).toEqual(['user:1']);
    expect(warnings).toHaveLength(1);
    expect(warnings[0]!.code).toBe('invalid_deny_entry');
    expect(warnings[0]!.message).toMatch(/2 deny entries are not valid and ignored/);
    await watcher.stop();
  });

  test('expired entries are removed by the next write, a hundred at most per change, each removal a change watchers apply', async () => {
    const { source, limiter, watcher } = setup();
    await watcher.ready;
    const entries = Array.from({ length: 150 }, (_, i) => ({ match: `user:${i}`, until: 2_000 }));
    await addDenyEntries(source, 'api', [...entries, { match: 'user:kept' }], { now: 1_000 });
    await watcher.refresh();
    expect(limiter.deny).toHaveLength(151);
    await addDenyEntry(source, 'api', { match: 'user:new' }, { now: 2_000 });
    await turn();
    expect(limiter.deny).toHaveLength(152 - 100);
    await addDenyEntry(source, 'api', { match: 'user:newer' }, { now: 2_001 });
    await turn();
    expect(matches(limiter)).toEqual(['user:kept', 'user:new', 'user:newer']);
    expect((await source.deny.readPage('api', '0', 1000)).entries).toHaveLength(3);
    await watcher.stop();
  });

  test('a large write goes as changes of at most 500 entries and about 200 kB each', async () => {
    const { source, watcher } = setup();
    await addDenyEntries(
      source,
      'api',
      Array.from({ length: 2_500 }, (_, i) => ({ match: `user:${i}` })),
    );
    expect((await source.deny.readChanges('api', undefined)).version?.version).toBe(5); // 2,500 in changes of 500
    const long = Array.from({ length: 1_000 }, (_, i) => ({ match: `key:${String(i).padStart(250, '0')}`, reason: 'r'.repeat(200) }));
    await addDenyEntries(source, 'api', long);
    const changes = (
      await source.deny.readChanges('api', { epoch: (await source.deny.readChanges('api', undefined)).version!.epoch, version: 5 })
    ).changes!;
    expect(changes.length).toBeGreaterThan(1);
    for (const text of changes) expect(text.length).toBeLessThan(400_000);
    await watcher.stop();
  });
});
