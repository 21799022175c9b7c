/**
 * The bug this pins: long identities defeated the memory bound. A 15,000-character identity cost about 15.6 KB
 * in the memory store (its 163-character key was a slice that kept the whole identity alive) against about 840 B
 * for a 200-character one; a server keyed on an API-key header died out of memory. Measured here on the real
 * heap after full garbage collections: a 15,000-character identity costs no more than a 200-character one.
 * Node only: it reads V8's heap (the file name keeps it out of the edge-runtime run).
 */
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { createLimiter, tokenBucket } from '@sluice/core';
import { describe, expect, test } from 'vitest';
import { memoryStore } from '../src/index.js';

setFlagsFromString('--expose-gc');
const gc = runInNewContext('gc') as () => void;

function heapUsed(): number {
  for (let i = 0; i < 3; i++) gc();
  return process.memoryUsage().heapUsed;
}

/** Heap held per identity once `count` identities of `length` characters have each made one decision. */
function bytesPerIdentity(length: number, count: number): number {
  const store = memoryStore({ maxKeys: count * 2 });
  const limiter = createLimiter({ store, rules: tokenBucket({ capacity: 10, refillRate: 1 }) });
  const before = heapUsed();
  for (let i = 0; i < count; i++) {
    // A fresh string per identity, as an API-key header is: nothing but the store may keep it.
    const identity = `${String(i).padStart(8, '0')}:${'k'.repeat(length - 9)}`;
    limiter.limitSync(identity);
  }
  const after = heapUsed();
  expect(store.size).toBe(count);
  return (after - before) / count;
}

describe("memory per identity does not grow with the identity's length", () => {
  test('regression: a 15,000-character identity costs no more than a 200-character one', () => {
    const count = 2_000;
    const short = bytesPerIdentity(200, count);
    const long = bytesPerIdentity(15_000, count);
    console.log(`[heap] bytes per identity: 200 chars ${short.toFixed(0)}, 15,000 chars ${long.toFixed(0)}`);
    expect(long).toBeLessThan(short * 1.25 + 64);
    expect(long).toBeLessThan(2_000); // 15,000 one-byte characters alone would be 15 KB
  });
});
