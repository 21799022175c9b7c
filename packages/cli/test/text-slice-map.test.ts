// The map `sluice tune` looks identities up in, by a stretch of a chunk's text: it must answer exactly what a Map
// keyed by `text.slice(start, end)` answers, for keys kept in a slot (short, every character below 256) and keys
// kept aside (longer, or with a character above 255), through resizes and a clear.
import { describe, expect, it } from 'vitest';
import { ABSENT, TextSliceMap } from '../src/tune/text-slice-map.js';

/** A small deterministic generator (mulberry32), so a failure is the same on every run. */
function random(seed: number): () => number {
  return () => {
    seed = (seed + 0x6d2b79f5) | 0;
    let t = Math.imul(seed ^ (seed >>> 15), 1 | seed);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const ALPHABETS = ['0123456789', 'abc.:', 'aé\u00ff', 'a\u0100\u4e2d', '\ud83d\ude00x'];

function key(next: () => number): string {
  const alphabet = ALPHABETS[Math.floor(next() * ALPHABETS.length)]!;
  // Lengths around the 20 characters a slot holds, and a few far longer.
  const length = next() < 0.05 ? 30 + Math.floor(next() * 100) : Math.floor(next() * 26);
  let text = '';
  for (let i = 0; i < length; i++) text += alphabet[Math.floor(next() * alphabet.length)]!;
  return text;
}

describe('TextSliceMap', () => {
  it('answers what a Map of the sliced keys answers, for keys in a slot and kept aside, across resizes', () => {
    const next = random(7);
    const map = new TextSliceMap(4);
    const reference = new Map<string, number>();
    for (let i = 0; i < 20_000; i++) {
      const k = key(next);
      // Looked up inside a larger text, as a log line's field is.
      const prefix = key(next);
      const text = `${prefix}${k}"${key(next)}`;
      const found = map.get(text, prefix.length, prefix.length + k.length);
      expect(found, JSON.stringify(k)).toBe(reference.get(k) ?? ABSENT);
      if (found === ABSENT) {
        const value = next() < 0.1 ? -1 : i;
        map.set(k, value);
        reference.set(k, value);
      }
    }
    expect(map.size).toBe(reference.size);
    expect(reference.size).toBeGreaterThan(5_000);
  });

  it('tells apart keys that differ only past the 20 characters a slot holds, or by one character above 255', () => {
    const map = new TextSliceMap();
    const twenty = 'u'.repeat(20);
    map.set(twenty, 1);
    map.set(`${twenty}x`, 2);
    map.set(`${twenty}y`, 3);
    map.set('caf\u00e9', 4);
    map.set('caf\u0100', 5);
    map.set('', 6);
    const at = (k: string) => map.get(`[${k}]`, 1, 1 + k.length);
    expect([twenty, `${twenty}x`, `${twenty}y`, `${twenty}z`, 'caf\u00e9', 'caf\u0100', 'caf\u0101', ''].map(at)).toEqual([
      1,
      2,
      3,
      ABSENT,
      4,
      5,
      ABSENT,
      6,
    ]);
    map.clear();
    expect(map.size).toBe(0);
    expect([twenty, `${twenty}x`, 'caf\u0100', ''].map(at)).toEqual([ABSENT, ABSENT, ABSENT, ABSENT]);
    map.set(`${twenty}x`, 7);
    expect(at(`${twenty}x`)).toBe(7);
  });
});
