import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { createLimiter, fixedWindow } from '../src/index.js';
import { denyChangesSince, denyListVersion, liveDenyList, type LiveDenyLineage } from '../src/config/index.js';
import type { DenyEntry } from '../src/deny/entries.js';
import { JOURNAL_LENGTH } from '../src/deny/lineage.js';
import { MapStore } from './support/map-store.js';

const make = () => createLimiter({ name: 'api', store: new MapStore(), rules: fixedWindow({ limit: 10, window: '1s' }) });
const matches = (list: readonly DenyEntry[]) => list.map((entry) => entry.match).sort();

describe('the change() of a live deny list: a change to some entries of the deny list', () => {
  it('clears, then removes, then adds, an added entry replacing the one with its match', () => {
    const limiter = make();
    limiter.configure({ deny: liveDenyList([{ match: 'user:1' }, { match: 'user:2' }, { match: '203.0.113.0/24', reason: 'old' }]) });
    (limiter.denyLineage as LiveDenyLineage).change({
      remove: ['user:1'],
      add: [{ match: '203.0.113.0/24', reason: 'new' }, { match: 'user:3' }],
    });
    expect(matches(limiter.deny)).toEqual(['203.0.113.0/24', 'user:2', 'user:3']);
    expect(limiter.deny.find((entry) => entry.match === '203.0.113.0/24')?.reason).toBe('new');
    (limiter.denyLineage as LiveDenyLineage).change({ clear: true, add: [{ match: 'user:9' }] });
    expect(matches(limiter.deny)).toEqual(['user:9']);
    expect(Object.isFrozen(limiter.deny)).toBe(true);
  });

  it('keeps the array when the change changes nothing, and refuses a bad entry naming it, leaving the list as it was', () => {
    const limiter = make();
    limiter.configure({ deny: liveDenyList([{ match: 'user:1' }]) });
    const before = limiter.deny;
    (limiter.denyLineage as LiveDenyLineage).change({});
    expect(limiter.deny).toBe(before);
    expect(() => (limiter.denyLineage as LiveDenyLineage).change({ add: [{ match: 'user:2' }, { match: ' x' }] })).toThrow(
      /change\.add\[1\]\.match/,
    );
    expect(() => (limiter.denyLineage as LiveDenyLineage).change({ remove: [''] })).toThrow(
      /change must be \{ clear\?: boolean, remove\?: matches, add\?: entries \}/,
    );
    expect(() => (limiter.denyLineage as LiveDenyLineage).change({ drop: [] } as never)).toThrow(
      /change must be \{ clear\?: boolean, remove\?: matches, add\?: entries \}, e\.g\. \{ remove: \[.user:42.\] \}, got the unknown field "drop"/,
    );
    expect(limiter.deny).toBe(before);
  });

  it('journals each change, so a reader at an older version gets exactly the changes since, until the journal no longer reaches', () => {
    const limiter = make();
    limiter.configure({ deny: liveDenyList([{ match: 'user:0' }]) });
    const start = denyListVersion(limiter.deny)!;
    expect(start.version).toBe(0);
    for (let i = 1; i <= 3; i++) (limiter.denyLineage as LiveDenyLineage).change({ add: [{ match: `user:${i}` }] });
    const now = denyListVersion(limiter.deny)!;
    expect(now.lineage).toBe(start.lineage);
    expect(now.version).toBe(3);
    expect(denyChangesSince(now.lineage, 1, 3)!.map((step) => step.add.map((entry) => entry.match))).toEqual([['user:2'], ['user:3']]);
    for (let i = 0; i < JOURNAL_LENGTH; i++)
      (limiter.denyLineage as LiveDenyLineage).change({ remove: ['user:0'], add: [{ match: `user:x${i}` }] });
    expect(denyChangesSince(now.lineage, 3, 3 + JOURNAL_LENGTH)).toHaveLength(JOURNAL_LENGTH);
    expect(denyChangesSince(now.lineage, 2, 3 + JOURNAL_LENGTH)).toBeUndefined();
    // A full list starts a new lineage: readers build it whole.
    limiter.configure({ deny: liveDenyList([{ match: 'user:new' }]) });
    expect(denyListVersion(limiter.deny)!.lineage).not.toBe(now.lineage);
  });

  it('a list shared by two limiters is never changed for the other: each change of one forks its own lineage', () => {
    const a = make();
    const b = make();
    a.configure({ deny: liveDenyList([{ match: 'user:1' }]) });
    b.configure({ deny: liveDenyList(a.deny) });
    (b.denyLineage as LiveDenyLineage).change({ add: [{ match: 'user:2' }] });
    expect(matches(a.deny)).toEqual(['user:1']);
    expect(denyListVersion(b.deny)!.lineage).not.toBe(denyListVersion(a.deny)!.lineage);
  });

  it('replaying the journal over the old list gives the new list, for any sequence of changes', () => {
    const match = fc.constantFrom('user:1', 'user:2', 'user:3', '203.0.113.0/24', '2001:db8::/56');
    const change = fc.record(
      {
        clear: fc.boolean(),
        remove: fc.array(match, { maxLength: 3 }),
        add: fc.array(fc.record({ match, reason: fc.constantFrom('a', 'b') }), { maxLength: 3 }),
      },
      { requiredKeys: [] },
    );
    fc.assert(
      fc.property(fc.array(change, { maxLength: 12 }), (changes) => {
        const limiter = make();
        limiter.configure({ deny: liveDenyList([{ match: 'user:1', reason: 'start' }]) });
        const start = denyListVersion(limiter.deny)!;
        const model = new Map(limiter.deny.map((entry) => [entry.match, entry.reason]));
        for (const c of changes) (limiter.denyLineage as LiveDenyLineage).change(c);
        const end = denyListVersion(limiter.deny)!;
        for (const step of denyChangesSince(start.lineage, start.version, end.version)!) {
          if (step.clear) model.clear();
          for (const m of step.remove) model.delete(m);
          for (const entry of step.add) model.set(entry.match, entry.reason);
        }
        expect(new Map(limiter.deny.map((entry) => [entry.match, entry.reason]))).toEqual(model);
        expect(new Set(limiter.deny.map((entry) => entry.match)).size).toBe(limiter.deny.length);
      }),
    );
  });
});
