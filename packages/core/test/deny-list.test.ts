/**
 * The deny list in core: the entries' shape (checked strictly by writers and configure, leniently by watchConfig,
 * which drops a bad entry with one warning per document revision), the limiter holding one frozen array until the
 * list changes (the HTTP layer caches its matcher by that array), and the compare-and-set writers.
 */
import { afterEach, beforeEach, describe, expect, test, vi } from 'vitest';
import { createLimiter, fixedWindow, type Limiter } from '../src/index.js';
import {
  addDenyEntry,
  deleteLimiterConfig,
  parseLimiterConfig,
  readLimiterConfig,
  removeDenyEntry,
  setLimiterMode,
  watchConfig,
  writeLimiterConfig,
  type ConfigWarning,
  type DenyEntry,
} from '../src/config/index.js';
import { MapStore } from './support/map-store.js';
import { MapConfigSource } from './support/map-config-source.js';

const limiter = (): Limiter => createLimiter({ store: new MapStore(), rules: fixedWindow({ limit: 2, window: '1h' }), name: 'api' });

/** MapConfigSource with compare and set, as every sluice source has. */
class CasConfigSource extends MapConfigSource {
  replace(name: string, expectedRevision: number, text: string): Promise<boolean> {
    const stored = this.documents.get(name);
    const revision = stored === undefined ? 0 : (JSON.parse(stored) as { revision: number }).revision;
    if (revision !== expectedRevision) return Promise.resolve(false);
    this.write(name, text);
    return Promise.resolve(true);
  }
}

const document = (deny: unknown, revision = 1) => JSON.stringify({ version: 1, revision, updatedAt: 0, deny });

describe('deny entries: the shape core checks', () => {
  test.each([
    [[{ match: '' }], 'deny[0].match: must be an identity or an IP range'],
    [[{ match: 'x'.repeat(257) }], 'deny[0].match: must be'],
    [[{ match: 'user:\n42' }], 'deny[0].match: must be'],
    [
      [{ match: 'a' }, { match: 'b' }, { match: 'c' }, { match: 'd', until: -1 }],
      'deny[3].until: must be an integer from 0 to 8640000000000000 (epoch ms, within what a Date holds), got -1',
    ],
    [[{ match: 'a', until: 1.5 }], 'deny[0].until: must be an integer from 0 to 8640000000000000'],
    [[{ match: 'a', addedAt: '2026' }], 'deny[0].addedAt: must be an integer from 0 to 8640000000000000'],
    // Past the latest time a Date holds though below 2^53: no reader could print it as a date.
    [[{ match: 'a', until: 8_640_000_000_000_001 }], 'deny[0].until: must be an integer from 0 to 8640000000000000'],
    [[{ match: 'a', addedAt: 9_000_000_000_000_000 }], 'deny[0].addedAt: must be an integer from 0 to 8640000000000000'],
    [[{ match: ' ' }], 'deny[0].match: must be an identity or an IP range'],
    [[{ match: 'user:42 ' }], 'without control characters or spaces around it, got "user:42 "'],
    [[{ match: 'a', reason: 'r'.repeat(201) }], 'deny[0].reason: must be a string of at most 200 characters'],
    [[{ match: 'a', why: 'x' }], 'deny[0]: unknown field "why"'],
    [[{ match: 'a' }, { match: 'a' }], 'deny[1].match: another entry already matches "a"'],
    [['203.0.113.7'], 'deny[0]: must be an object'],
    [{ match: 'a' }, 'deny must be an array of entries'],
  ])('a document with deny %j is refused strictly, naming the field', (deny, message) => {
    expect(() => parseLimiterConfig(document(deny))).toThrow(message);
  });

  test('a valid list is kept whole; 256 characters and a 200-character reason are accepted', () => {
    const deny = [
      { match: '203.0.113.0/24', until: 5_000, reason: 'r'.repeat(200), addedAt: 1_000 },
      { match: 'k'.repeat(256) },
      { match: '2001:db8::/56', until: 8_640_000_000_000_000 },
    ];
    expect(parseLimiterConfig(document(deny)).deny).toEqual(deny);
  });
});

describe('limiter.deny and configure({ deny })', () => {
  test('starts empty and frozen; keeps the same array object until the list changes', () => {
    const l = limiter();
    expect(l.deny).toEqual([]);
    expect(Object.isFrozen(l.deny)).toBe(true);
    l.configure({ deny: [{ match: 'user:42', reason: 'abuse' }] });
    const first = l.deny;
    expect(first).toEqual([{ match: 'user:42', reason: 'abuse' }]);
    expect(Object.isFrozen(first) && Object.isFrozen(first[0])).toBe(true);
    l.configure({ mode: 'shadow' });
    expect(l.deny).toBe(first);
    l.configure({ deny: [{ match: 'user:42', reason: 'abuse' }] }); // equal entries: the array stays
    expect(l.deny).toBe(first);
    l.configure({ deny: [{ match: 'user:42', reason: 'other' }] });
    expect(l.deny).not.toBe(first);
    expect(l.deny[0]!.reason).toBe('other');
    l.configure({ deny: [] });
    expect(l.deny).toEqual([]);
  });

  test('a bad entry is refused with its field and nothing changes (not the mode either)', () => {
    const l = limiter();
    l.configure({ deny: [{ match: 'a' }] });
    const before = l.deny;
    expect(() => l.configure({ mode: 'off', deny: [{ match: 'b' }, { match: 'c', until: -5 }] as DenyEntry[] })).toThrow(
      'configure: deny[1].until: must be an integer from 0 to 8640000000000000',
    );
    expect(l.deny).toBe(before);
    expect(l.mode).toBe('enforce');
  });

  test("the list is not the limiter's decision: a denied identity is still decided by the rules", async () => {
    const l = limiter();
    l.configure({ deny: [{ match: 'user:42' }] });
    expect((await l.limit('user:42')).allowed).toBe(true);
  });
});

describe('watchConfig and deny', () => {
  let warnings: ConfigWarning[];
  const onWarning = (w: ConfigWarning) => void warnings.push(w);
  beforeEach(() => {
    vi.useFakeTimers();
    warnings = [];
  });
  afterEach(() => {
    vi.useRealTimers();
  });

  test("applies the document's list, keeps its array across a change elsewhere, and returns to the code's on removal", async () => {
    const source = new CasConfigSource();
    const l = limiter();
    l.configure({ deny: [{ match: 'code:1' }] });
    const code = l.deny;
    const watcher = watchConfig(l, source, { onWarning });
    await watcher.ready;
    expect(l.deny).toBe(code);
    await addDenyEntry(source, 'api', { match: '203.0.113.0/24', reason: 'scraper' }, { now: 1_000 });
    await watcher.refresh();
    expect(l.deny).toEqual([{ match: '203.0.113.0/24', reason: 'scraper', addedAt: 1_000 }]);
    const fromStore = l.deny;
    await setLimiterMode(source, 'api', 'shadow');
    await watcher.refresh();
    expect(l.mode).toBe('shadow');
    expect(l.deny).toBe(fromStore);
    await writeLimiterConfig(source, 'api', { deny: null }); // a document without deny: the code's list
    await watcher.refresh();
    expect(l.deny).toBe(code);
    await addDenyEntry(source, 'api', { match: 'user:9' });
    await watcher.refresh();
    expect(l.deny.map((e) => e.match)).toEqual(['user:9']);
    await deleteLimiterConfig(source, 'api');
    await watcher.refresh();
    expect(l.deny).toBe(code);
    expect(l.mode).toBe('enforce');
    await watcher.stop();
    expect(warnings).toEqual([]);
  });

  test('a bad entry is dropped alone, with one warning per document revision however many are bad', async () => {
    const source = new MapConfigSource();
    const l = limiter();
    const watcher = watchConfig(l, source, { onWarning });
    await watcher.ready;
    const bad = [{ match: 'a' }, { match: 'b', until: -1 }, { match: '' }, { match: 'c', reason: 7 }, { match: 'd', x: 1 }, { match: 'e' }];
    source.write('api', document(bad, 7));
    await watcher.refresh();
    expect(l.deny.map((e) => e.match)).toEqual(['a', 'e']);
    expect(warnings).toHaveLength(1);
    expect(warnings[0]!.code).toBe('invalid_deny_entry');
    expect(warnings[0]!.message).toContain('revision 7: 4 deny entries are not valid and ignored');
    expect(warnings[0]!.message).toContain('deny[1].until: must be an integer from 0 to 8640000000000000');
    expect(warnings[0]!.message).toContain('and 1 more');
    await watcher.refresh(); // the same text again: not handled, not reported again
    await vi.advanceTimersByTimeAsync(3_000);
    expect(warnings).toHaveLength(1);
    source.write('api', document([{ match: 'a' }, { match: 'f', addedAt: -3 }], 8));
    await watcher.refresh();
    expect(l.deny.map((e) => e.match)).toEqual(['a']);
    expect(warnings.map((w) => w.message.match(/revision \d+: \d+/)![0])).toEqual(['revision 7: 4', 'revision 8: 1']);
    await watcher.stop();
  });

  test('a deny that is not a list makes the whole document invalid: the last configuration stays', async () => {
    const source = new MapConfigSource();
    const l = limiter();
    const watcher = watchConfig(l, source, { onWarning });
    source.write('api', document([{ match: 'a' }], 1));
    await watcher.ready;
    await watcher.refresh();
    source.write('api', JSON.stringify({ version: 1, revision: 2, mode: 'off', deny: { match: 'b' } }));
    await watcher.refresh();
    expect(l.deny.map((e) => e.match)).toEqual(['a']);
    expect(l.mode).toBe('enforce');
    expect(warnings.map((w) => w.code)).toEqual(['invalid_document']);
    await watcher.stop();
  });
});

describe('addDenyEntry and removeDenyEntry', () => {
  test('add stamps addedAt, replaces an entry with the same match in place, and drops expired entries', async () => {
    const source = new CasConfigSource();
    await addDenyEntry(source, 'api', { match: 'a', until: 2_000 }, { now: 1_000 });
    await addDenyEntry(source, 'api', { match: 'b', reason: 'first' }, { now: 1_500 });
    await addDenyEntry(source, 'api', { match: 'c', addedAt: 7 }, { now: 1_500 });
    expect((await readLimiterConfig(source, 'api'))?.deny).toEqual([
      { match: 'a', until: 2_000, addedAt: 1_000 },
      { match: 'b', reason: 'first', addedAt: 1_500 },
      { match: 'c', addedAt: 7 },
    ]);
    const written = await addDenyEntry(source, 'api', { match: 'b', reason: 'second', until: 9_000 }, { now: 1_999 });
    expect(written.size).toBe(3); // a's until 2000 is still to come at 1999
    expect((await readLimiterConfig(source, 'api'))?.deny?.map((e) => e.match)).toEqual(['a', 'b', 'c']);
    const later = await addDenyEntry(source, 'api', { match: 'd' }, { now: 2_000 }); // and expired at 2000
    expect(later.entries).toEqual([{ match: 'd', addedAt: 2_000 }]);
    expect((await readLimiterConfig(source, 'api'))?.deny).toEqual([
      { match: 'b', reason: 'second', until: 9_000, addedAt: 1_999 },
      { match: 'c', addedAt: 7 },
      { match: 'd', addedAt: 2_000 },
    ]);
    expect(later.revision).toBe(5);
  });

  test('refuses to grow past maxEntries, but replacing or reclaiming expired room is allowed', async () => {
    const source = new CasConfigSource();
    await addDenyEntry(source, 'api', { match: 'a' }, { maxEntries: 2, now: 0 });
    await addDenyEntry(source, 'api', { match: 'b', until: 10 }, { maxEntries: 2, now: 0 });
    await expect(addDenyEntry(source, 'api', { match: 'c' }, { maxEntries: 2, now: 5 })).rejects.toThrow(
      'already holds 2 entries, the most maxEntries (2) allows',
    );
    await addDenyEntry(source, 'api', { match: 'a', reason: 'again' }, { maxEntries: 2, now: 5 });
    await addDenyEntry(source, 'api', { match: 'c' }, { maxEntries: 2, now: 10 }); // b expired at 10
    expect((await readLimiterConfig(source, 'api'))?.deny?.map((e) => e.match)).toEqual(['a', 'c']);
  });

  test('the default bound is 100,000 entries', async () => {
    const source = new CasConfigSource();
    const deny = Array.from({ length: 100_000 }, (_, i) => ({ match: `user:${i}` }));
    source.write('api', document(deny));
    await expect(addDenyEntry(source, 'api', { match: 'one-more' })).rejects.toThrow('maxEntries (100000)');
    await expect(addDenyEntry(source, 'api', { match: 'user:5', reason: 'replace' })).resolves.toBeDefined();
  });

  test('bad input is refused before anything is read or written', async () => {
    const source = new CasConfigSource();
    await expect(addDenyEntry(source, 'api', { match: 'a', until: 5 }, { now: 5 })).rejects.toThrow('entry.until (5) has already passed');
    await expect(addDenyEntry(source, 'api', { match: 'a\u0000' })).rejects.toThrow('addDenyEntry: entry.match: must be');
    await expect(addDenyEntry(source, 'api', { match: 'a' }, { maxEntries: 0 })).rejects.toThrow('maxEntries must be a positive integer');
    await expect(addDenyEntry(source, 'api', { match: 'a' }, { limit: 3 } as never)).rejects.toThrow('unknown option "limit"');
    await expect(removeDenyEntry(source, 'api', '')).rejects.toThrow('match must be');
    expect(source.reads).toBe(0);
    expect(source.documents.size).toBe(0);
  });

  test('remove answers whether the entry was there, and writes only when it was', async () => {
    const source = new CasConfigSource();
    expect(await removeDenyEntry(source, 'api', 'a')).toBe(false);
    expect(source.documents.size).toBe(0);
    await addDenyEntry(source, 'api', { match: 'a' });
    await addDenyEntry(source, 'api', { match: 'b' });
    expect(await removeDenyEntry(source, 'api', 'a')).toBe(true);
    expect(await removeDenyEntry(source, 'api', 'a')).toBe(false);
    expect((await readLimiterConfig(source, 'api'))?.revision).toBe(3);
    expect(await removeDenyEntry(source, 'api', 'b')).toBe(true);
    const last = await readLimiterConfig(source, 'api');
    expect(last?.deny).toBeUndefined();
    expect(last?.revision).toBe(4);
  });

  test('an entry instances ignore (bad until) does not block writers: remove and add work, and the next write leaves it out', async () => {
    const source = new CasConfigSource();
    source.write('api', document([{ match: 'a' }, { match: 'bad', until: -1 }, { match: 'b' }], 7));
    await expect(readLimiterConfig(source, 'api')).rejects.toThrow('deny[1].until');
    expect(await removeDenyEntry(source, 'api', 'a')).toBe(true);
    const after = await readLimiterConfig(source, 'api');
    expect(after?.deny?.map((entry) => entry.match)).toEqual(['b']);
    expect(after?.revision).toBe(8);
    source.write('api', document([{ match: 'bad', until: 'soon' }], 8));
    await addDenyEntry(source, 'api', { match: 'c' }, { now: 1 });
    expect((await readLimiterConfig(source, 'api'))?.deny?.map((entry) => entry.match)).toEqual(['c']);
  });

  test('an entry past the latest Date, or that is not an object, is removed by its match (it used to stay: remove found nothing)', async () => {
    const source = new CasConfigSource();
    const far = { match: 'user:x', until: 8_640_001_800_000_000 };
    source.write('api', document([{ match: 'a' }, far, { match: 'key:y', until: 'soon' }, 'plain text'], 3));
    const problems: Array<[number, string, unknown]> = [];
    const read = await readLimiterConfig(source, 'api', { onBadDenyEntry: (i, error, entry) => problems.push([i, error.detail, entry]) });
    expect(read?.deny?.map((entry) => entry.match)).toEqual(['a']);
    expect(problems).toEqual([
      [1, expect.stringMatching(/^deny\[1\]\.until: must be an integer from 0 to 8640000000000000/), far],
      [2, expect.stringMatching(/^deny\[2\]\.until: must be/), { match: 'key:y', until: 'soon' }],
      [3, expect.stringMatching(/^deny\[3\]: must be an object/), 'plain text'],
    ]);
    expect(await removeDenyEntry(source, 'api', 'user:x')).toBe(true);
    const after = JSON.parse(source.documents.get('api')!) as { revision: number; deny: unknown[] };
    expect([after.revision, after.deny]).toEqual([4, [{ match: 'a' }]]); // every entry instances ignore is gone
    expect(await removeDenyEntry(source, 'api', 'user:x')).toBe(false);
  });

  test('readLimiterConfig checks its options', async () => {
    const source = new CasConfigSource();
    await expect(readLimiterConfig(source, 'api', { onBadDenyEntry: 'warn' } as never)).rejects.toThrow(
      'readLimiterConfig: onBadDenyEntry must be',
    );
    await expect(readLimiterConfig(source, 'api', { onBad: () => {} } as never)).rejects.toThrow('unknown option "onBad"');
  });

  test('addDenyEntry refuses a now past the latest Date before reading anything', async () => {
    const source = new CasConfigSource();
    await expect(addDenyEntry(source, 'api', { match: 'a' }, { now: 8_640_000_000_000_001 })).rejects.toThrow(
      'addDenyEntry: now must be an integer from 0 to 8640000000000000 (epoch ms)',
    );
    await expect(addDenyEntry(source, 'api', { match: 'a', until: 8_640_000_000_000_001 }, { now: 1 })).rejects.toThrow(
      'addDenyEntry: entry.until: must be an integer from 0 to 8640000000000000',
    );
    expect(source.reads).toBe(0);
  });

  test('a document that is not valid otherwise still blocks writers, with the reason', async () => {
    const source = new CasConfigSource();
    source.write('api', JSON.stringify({ version: 1, revision: 1, updatedAt: 0, mode: 'sometimes' }));
    await expect(addDenyEntry(source, 'api', { match: 'c' })).rejects.toThrow(/not valid.*mode/);
  });

  test('writers at once all land: the compare and set retries over a newer revision', async () => {
    const source = new CasConfigSource();
    await Promise.all(Array.from({ length: 20 }, (_, i) => addDenyEntry(source, 'api', { match: `ip-${i}` })));
    const stored = await readLimiterConfig(source, 'api');
    expect(stored?.deny).toHaveLength(20);
    expect(stored?.revision).toBe(20);
  });
});
