/**
 * The `async` strategy: admissions counted in memory reach the shared store, by flushes and all of them on close(),
 * and a flush the shared store refuses (it is down) neither surfaces as an unhandled rejection nor loses its counts.
 */
import { describe, expect, test } from 'vitest';
import { fixedWindow } from '@sluice/core';
import { tierFixture } from './support.js';

describe('asynchronous counting', () => {
  test('counts reach the shared store: by flushes, and all of them on close()', async () => {
    const { store, limiter, direct } = tierFixture('async', { async: { flushEvery: 5 } });
    const rule = fixedWindow({ limit: 1000, window: '1m' });
    const limited = limiter(rule);
    for (let i = 0; i < 37; i++) expect((await limited.limit('a')).allowed).toBe(true);
    await store.close();
    expect((await direct(rule).peek('a')).remaining).toBe(1000 - 37);
    expect(store.stats().local).toBeGreaterThan(20);
  });
});

describe('failures', () => {
  test('a rejected background flush never surfaces as an unhandled rejection, and the counts are kept', async () => {
    const { clock, shared, store, limiter, direct } = tierFixture('async', { async: { flushEvery: 1 } });
    const rule = fixedWindow({ limit: 1000, window: '1m' });
    const limited = limiter(rule);
    await limited.limit('a');
    shared.failing = true;
    await limited.limit('a');
    await limited.limit('a');
    await store.sync();
    shared.failing = false;
    clock.now += 600;
    await store.close();
    expect((await direct(rule).peek('a')).remaining).toBe(997);
  });
});
