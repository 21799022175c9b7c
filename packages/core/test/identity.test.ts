import fc from 'fast-check';
import { describe, expect, test } from 'vitest';
import { createLimiter, fixedWindow } from '../src/index.js';
import { MAX_VERBATIM_IDENTITY, identityKey } from '../src/store/index.js';
import { MapStore } from './support/map-store.js';
import { CLOCK_START } from './support/scenario.js';

const limiterOn = (store: MapStore) =>
  createLimiter({ store, rules: fixedWindow({ limit: 1, window: '1m', id: 'fw' }), clock: () => CLOCK_START });

describe('identities', () => {
  test('any Unicode is accepted and each identity has its own counter', () => {
    const identities = [
      '😀',
      'ユーザー',
      'مستخدم',
      'é',
      'e\u0301',
      '\u0000',
      ' ',
      'a:b',
      '{x}',
      '}',
      'user}:fw',
      '\ud800',
      '\udc00',
      '𝔘𝔫𝔦',
    ];
    const store = new MapStore();
    const limiter = limiterOn(store);
    for (const id of identities) expect(limiter.limitSync(id), id).toMatchObject({ allowed: true });
    for (const id of identities) expect(limiter.limitSync(id).allowed, id).toBe(false);
    expect(store.records.size).toBe(identities.length);
  });

  test('identities of any length work; long ones are stored under a bounded key', () => {
    const store = new MapStore();
    const limiter = limiterOn(store);
    for (const length of [1, MAX_VERBATIM_IDENTITY, MAX_VERBATIM_IDENTITY + 1, 10_000, 1_000_000]) {
      const id = 'x'.repeat(length);
      expect(limiter.limitSync(id).allowed).toBe(true);
      expect(limiter.limitSync(id).allowed).toBe(false);
    }
    const longest = Math.max(...[...store.records.keys()].map((k) => k.length));
    expect(longest).toBeLessThan(200);
    expect(identityKey('x'.repeat(1_000_000)).length).toBeLessThanOrEqual(151);
  });

  test('short identities are kept verbatim; long ones keep a readable prefix', () => {
    const short = 'u'.repeat(MAX_VERBATIM_IDENTITY);
    expect(identityKey(short)).toBe(short);
    const long = `tenant-42/${'k'.repeat(500)}`;
    expect(identityKey(long).startsWith('tenant-42/')).toBe(true);
    expect(identityKey(long)).toBe(identityKey(`tenant-42/${'k'.repeat(500)}`)); // stable
  });

  test('distinct long identities, even sharing a long prefix, get distinct bounded keys', () => {
    const shared = 'p'.repeat(300);
    fc.assert(
      fc.property(fc.string({ minLength: 1 }), fc.string({ minLength: 1 }), (a, b) => {
        fc.pre(a !== b);
        const ka = identityKey(shared + a);
        const kb = identityKey(shared + b);
        expect(ka).not.toBe(kb);
        expect(ka.length).toBeLessThan(200);
      }),
      { numRuns: 500 },
    );
    const store = new MapStore();
    const limiter = limiterOn(store);
    expect(limiter.limitSync(`${shared}a`).allowed).toBe(true);
    expect(limiter.limitSync(`${shared}b`).allowed).toBe(true);
  });

  test("a short identity spelled like a long identity's key does not share its counter", () => {
    const long = 'v'.repeat(1_000);
    const lookalike = identityKey(long);
    expect(lookalike.length).toBeGreaterThan(0);
    const limiter = limiterOn(new MapStore());
    expect(limiter.limitSync(long).allowed).toBe(true);
    expect(limiter.limitSync(lookalike).allowed).toBe(true);
  });

  test('any two distinct identities map to distinct keys', () => {
    const identity = fc.oneof(fc.string({ minLength: 1, maxLength: 200, unit: 'binary' }), fc.string({ minLength: 120, maxLength: 140 }));
    fc.assert(
      fc.property(identity, identity, (a, b) => {
        fc.pre(a !== b);
        expect(identityKey(a)).not.toBe(identityKey(b));
      }),
      { numRuns: 200 },
    );
    // 200 runs of up to 200 binary characters took 3.5 s on node and 5.2 s in edge-runtime on a loaded 2-core CI run.
  }, 30_000);
});

describe('identities that would break keys downstream', () => {
  test('lone surrogates, which UTF-8 would turn into the same bytes, get distinct well-formed keys', () => {
    const a = identityKey('a\uD800');
    const b = identityKey('a\uDBFF');
    expect(a).not.toBe(b);
    expect(a.length).toBeGreaterThan(MAX_VERBATIM_IDENTITY);
    expect(/[\uD800-\uDFFF]/.test(a)).toBe(false);
  });

  test('a leading } (an empty Redis Cluster hash tag) is keyed by hash, without braces', () => {
    const key = identityKey('}abc');
    expect(key.startsWith('}')).toBe(false);
    expect(/[{}]/.test(key)).toBe(false);
    expect(identityKey('a}bc')).toBe('a}bc'); // a brace later on still leaves a non-empty tag
  });

  test('well-formed emoji identities stay verbatim', () => {
    expect(identityKey('user-😀')).toBe('user-😀');
  });
});
