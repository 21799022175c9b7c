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
    expect(lru.get('k0')).toBeDefined(); // moved: 15 entries were put at the front after it, more than the slack of 2
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

  it('random gets and sets: every evicted entry had at least max - 1 - slack distinct others used after its last use', () => {
    for (const max of [8, 64, 200]) {
      const slack = Math.floor(max / 8);
      let seed = max;
      const random = (): number => (seed = (Math.imul(seed, 1103515245) + 12345) >>> 0) / 2 ** 32;
      /** key -> time of last use; the time is the step number. */
      const lastUse = new Map<string, number>();
      const evicted: string[] = [];
      const lru = new Lru<LruEntry>(max, (released) => evicted.push(released.key));
      let checked = 0;
      for (let step = 0; step < 20_000; step++) {
        // A hot set of max/2 keys, the rest a long tail: the hot ones must stay while the tail churns.
        const key = random() < 0.7 ? `hot${Math.floor(random() * (max / 2))}` : `tail${Math.floor(random() * max * 4)}`;
        if (lru.get(key) === undefined) {
          lru.set(key, entry());
          for (const gone of evicted.splice(0)) {
            const since = lastUse.get(gone)!;
            let usedAfter = 0;
            for (const [other, at] of lastUse) if (other !== gone && at > since) usedAfter++;
            expect(usedAfter, `max ${max}, ${gone} evicted at step ${step}`).toBeGreaterThanOrEqual(max - 1 - slack);
            lastUse.delete(gone);
            checked++;
          }
        }
        lastUse.set(key, step);
        expect(lru.size).toBeLessThanOrEqual(max);
      }
      expect(checked, 'the workload evicts').toBeGreaterThan(1000);
    }
  });

  it('moves nothing while the entries in use are fewer than the slack: hits leave the order as it was', () => {
    // max 1024 (slack 128) holding 64 entries: no hit is ever more than 64 moves behind, so lru-cache is not touched.
    const lru = new Lru<LruEntry>(1024);
    for (let i = 0; i < 64; i++) lru.set(`k${i}`, entry());
    for (let i = 0; i < 10_000; i++) lru.get(`k${i % 64}`);
    expect([...lru.newestFirst()].map((e) => e.key)).toEqual(Array.from({ length: 64 }, (_, i) => `k${63 - i}`));
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
