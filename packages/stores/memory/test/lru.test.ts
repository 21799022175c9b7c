import { describe, expect, it } from 'vitest';
import { Lru, type LruEntry } from '../src/lru.js';

const entry = (): LruEntry => ({ key: '', movedAt: 0 });

function filled(max: number): Lru<LruEntry> {
  const lru = new Lru<LruEntry>(max);
  for (let i = 0; i < max; i++) lru.set(`k${i}`, entry());
  return lru;
}

describe('Lru: bounded, nearly least recently used', () => {
  it('a used entry outlives entries not used since: the oldest unused one is evicted', () => {
    const lru = filled(16);
    expect(lru.get('k0')).toBeDefined(); // moved: 16 operations since it was set, more than the slack of 2
    lru.set('new', entry());
    expect(lru.size).toBe(16);
    expect(lru.peek('k0')).toBeDefined();
    expect(lru.peek('k1')).toBeUndefined();
  });

  it('never evicts an entry while fewer than max - 1 - slack others were used after it', () => {
    const max = 64;
    const slack = max / 8;
    const lru = filled(max);
    // Touch k0 often, each time followed by a few new entries; it must survive every one of them.
    for (let round = 0; round < 200; round++) {
      expect(lru.get('k0'), `round ${round}`).toBeDefined();
      for (let i = 0; i < max - 1 - slack; i++) lru.set(`r${round}-${i}`, entry());
      expect(lru.size).toBe(max);
    }
    // Unused for max entries, it goes.
    for (let i = 0; i < max; i++) lru.set(`last-${i}`, entry());
    expect(lru.peek('k0')).toBeUndefined();
  });

  it('keeps exact LRU order below 8 entries', () => {
    const lru = filled(4);
    lru.get('k0');
    lru.get('k1');
    lru.set('a', entry());
    lru.set('b', entry());
    expect([...lru.newestFirst()].map((e) => e.key)).toEqual(['b', 'a', 'k1', 'k0']);
  });
});

describe('Lru: built on lru-cache', () => {
  it('evicts through lru-cache at the bound and lists oldest entries without disturbing them', () => {
    const lru = filled(1000);
    for (let i = 0; i < 5000; i++) lru.set(`flood-${i}`, entry());
    expect(lru.size).toBe(1000);
    const oldest = lru.oldest(3).map((e) => e.key);
    expect(oldest).toEqual(['flood-4000', 'flood-4001', 'flood-4002']);
    for (const key of oldest) lru.delete(key);
    expect(lru.size).toBe(997);
  });
});
