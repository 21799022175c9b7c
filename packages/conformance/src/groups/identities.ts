import { fixedWindow, tokenBucket, type Store } from '@sluice/core';
import { describe, expect, it } from 'vitest';
import { itWithKeys, type TestContext } from '../context.js';

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

const LONG = 'x'.repeat(10_000);

/** Identities around the verbatim-prefix boundary and far beyond it, each distinct from the others. */
const LONG_IDENTITIES = [
  LONG,
  `${LONG.slice(1)}y`, // differs in the last character only
  `y${LONG.slice(1)}`, // differs in the first
  'z'.repeat(128), // the longest identity kept verbatim
  `${'z'.repeat(128)}z`, // one longer: hashed
  `x${'😀'.repeat(200)}`, // a surrogate pair straddles the verbatim prefix
  `x${'😀'.repeat(199)}😁`,
];

export function identityTests(get: () => TestContext<Store>, inspect: boolean): void {
  describe('identities', () => {
    it('any Unicode identity gets its own state, byte-for-byte', async () => {
      const limiter = get().limiter({ rules: fixedWindow({ limit: 1, window: '1h' }) });
      for (const identity of UNICODE) {
        expect((await limiter.limit(identity)).allowed, `first request of ${JSON.stringify(identity)} must find its own empty state`).toBe(
          true,
        );
      }
      for (const identity of UNICODE) expect((await limiter.limit(identity)).allowed).toBe(false);
      await limiter.reset('👩‍💻');
      expect((await limiter.limit('👩‍💻')).allowed).toBe(true);
      expect((await limiter.peek('👩')).allowed).toBe(false);
    });

    it('long identities are accepted, kept apart, and reset one by one', async () => {
      const limiter = get().limiter({ rules: tokenBucket({ capacity: 1, refillRate: 1, interval: '1h' }) });
      for (const identity of LONG_IDENTITIES) expect((await limiter.limit(identity)).allowed).toBe(true);
      for (const identity of LONG_IDENTITIES) expect((await limiter.limit(identity)).allowed).toBe(false);
      await limiter.reset(LONG);
      expect((await limiter.limit(LONG)).allowed).toBe(true);
      expect((await limiter.peek(`${LONG.slice(1)}y`)).allowed).toBe(false);
    });

    itWithKeys(inspect, 'long identities are stored under bounded keys', async () => {
      const context = get();
      const limiter = context.limiter({ rules: tokenBucket({ capacity: 1, refillRate: 1, interval: '1h' }) });
      for (const identity of LONG_IDENTITIES) await limiter.limit(identity);
      const keys = await context.keys();
      expect(keys.length).toBeGreaterThanOrEqual(LONG_IDENTITIES.length);
      for (const key of keys) {
        expect(key.length, `key ${JSON.stringify(key.slice(0, 80))}… must stay bounded`).toBeLessThan(400);
      }
    });
  });
}
