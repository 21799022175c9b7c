import { fixedWindow, tokenBucket, type Store } from '@sluice/core';
import { describe, expect, it } from 'vitest';
import type { TestContext } from '../context.js';

/** Distinct strings a store must keep apart: scripts, emoji, normalisation forms, whitespace and case. */
const UNICODE = [
  'ユーザー42',
  '用户',
  '👩‍💻',
  '👩',
  'é', // U+00E9, precomposed
  'e\u0301', // e + combining acute: looks the same, is a different identity (no normalisation)
  'مرحبا',
  'Ωμέγα',
  '\u{1F600}\u{1F601}',
  'tab\there',
  'line\nbreak',
  ' ',
  'İ',
  'i̇',
];

export function identityTests(get: () => TestContext<Store>): void {
  describe('identities', () => {
    it('any Unicode identity gets its own state, byte-for-byte', async () => {
      const limiter = get().limiter({ rules: fixedWindow({ limit: 1, window: '1h' }) });
      for (const identity of UNICODE) {
        expect((await limiter.limit(identity)).allowed, `first request of ${JSON.stringify(identity)} must find its own empty state`).toBe(true);
      }
      for (const identity of UNICODE) expect((await limiter.limit(identity)).allowed).toBe(false);
      await limiter.reset('👩‍💻');
      expect((await limiter.limit('👩‍💻')).allowed).toBe(true);
      expect((await limiter.peek('👩')).allowed).toBe(false);
    });

    it('long identities are accepted, kept apart, and stored under bounded keys', async () => {
      const context = get();
      const long = 'x'.repeat(10_000);
      const identities = [
        long,
        `${long.slice(1)}y`, // differs in the last character only
        `y${long.slice(1)}`, // differs in the first
        'z'.repeat(128), // the longest identity kept verbatim
        `${'z'.repeat(128)}z`, // one longer: hashed
        `x${'😀'.repeat(200)}`, // a surrogate pair straddles the verbatim prefix
        `x${'😀'.repeat(199)}😁`,
      ];
      const limiter = context.limiter({ rules: tokenBucket({ capacity: 1, refillRate: 1, interval: '1h' }) });
      for (const identity of identities) expect((await limiter.limit(identity)).allowed).toBe(true);
      for (const identity of identities) expect((await limiter.limit(identity)).allowed).toBe(false);
      await limiter.reset(long);
      expect((await limiter.limit(long)).allowed).toBe(true);
      expect((await limiter.peek(`${long.slice(1)}y`)).allowed).toBe(false);
      const keys = await context.keys();
      if (keys !== undefined) {
        expect(keys.length).toBeGreaterThan(0);
        for (const key of keys) {
          expect(key.length, `key ${JSON.stringify(key.slice(0, 80))}… must stay bounded`).toBeLessThan(400);
        }
      }
    });
  });
}
