// The in-process config source under core's watchConfig: a write reaches the limiters beside it before the next
// decision (subscribers are told at once), with no timer involved.
import { describe, expect, test } from 'vitest';
import { createLimiter, fixedWindow } from '@sluice/core';
import { readLimiterConfig, setLimiterMode, setQuota, deleteLimiterConfig, watchConfig, type ConfigWarning } from '@sluice/core/config';
import { memoryConfigSource, memoryStore } from '../src/index.js';

// One timer turn: the push's read and apply (a few microtasks) are done by then. Typed here: no DOM or Node types.
const { setTimeout } = globalThis as unknown as { setTimeout(callback: () => void, ms: number): unknown };
const settle = () => new Promise<void>((resolve) => void setTimeout(resolve, 0));

describe('memoryConfigSource', () => {
  test('a write is applied by every watching limiter on the next turn, not at the next refresh', async () => {
    const source = memoryConfigSource();
    const warnings: ConfigWarning[] = [];
    const limiters = [1, 2].map(() =>
      createLimiter({ store: memoryStore(), rules: fixedWindow({ id: 'w', limit: 2, window: '1h' }), name: 'api' }),
    );
    const watchers = limiters.map((l) => watchConfig(l, source, { refresh: '1h', onWarning: (w) => void warnings.push(w) }));
    await Promise.all(watchers.map((w) => w.ready));
    await setLimiterMode(source, 'api', 'off');
    await settle();
    for (const l of limiters) expect((await l.limit('a')).reason).toBe('disabled');
    await setQuota(source, 'api', 'acme', { algorithm: 'fixed-window', id: 'w', limit: 5, window: '1h' });
    await setLimiterMode(source, 'api', 'enforce');
    await settle();
    const l = limiters[0]!;
    let acme = 0;
    let other = 0;
    for (let i = 0; i < 8; i++) {
      if ((await l.limit('acme')).allowed) acme++;
      if ((await l.limit('other')).allowed) other++;
    }
    expect([acme, other]).toEqual([5, 2]);
    await deleteLimiterConfig(source, 'api');
    await settle();
    expect(l.quotas.size).toBe(0);
    expect(await readLimiterConfig(source, 'api')).toMatchObject({ deleted: true }); // a tombstone
    await Promise.all(watchers.map((w) => w.stop()));
    expect(warnings).toEqual([]);
  });

  test('unsubscribing stops the calls; a subscriber that throws does not stop the others', () => {
    const source = memoryConfigSource();
    const calls: string[] = [];
    const stopA = source.subscribe('api', () => {
      calls.push('a');
      throw new Error('boom');
    });
    source.subscribe('api', () => void calls.push('b'));
    source.subscribe('other', () => void calls.push('other'));
    source.write('api', '{"version":1}');
    stopA();
    source.remove('api');
    expect(calls).toEqual(['a', 'b', 'b']);
    expect(source.read('api')).toBeUndefined();
    expect(() => source.write('api', { version: 1 } as never)).toThrow(
      /memoryConfigSource: write takes the document's text, got an object/,
    );
  });

  test('writers at once all land (replace: compare and set on the revision); a source without replace loses some', async () => {
    const source = memoryConfigSource();
    await Promise.all(
      Array.from({ length: 20 }, (_, i) =>
        setQuota(source, 'race', `user${i}`, { algorithm: 'fixed-window', id: 'w', limit: 5, window: '1h' }),
      ),
    );
    const stored = await readLimiterConfig(source, 'race');
    expect(Object.keys(stored?.quotas ?? {})).toHaveLength(20);
    expect(stored?.revision).toBe(20);

    // The same writers over a source that only has write: each read-modify-write can overwrite another's.
    const { replace: _replace, ...lastWriteWins } = memoryConfigSource();
    await Promise.all(
      Array.from({ length: 20 }, (_, i) =>
        setQuota(lastWriteWins, 'race', `user${i}`, { algorithm: 'fixed-window', id: 'w', limit: 5, window: '1h' }),
      ),
    );
    expect(Object.keys((await readLimiterConfig(lastWriteWins, 'race'))?.quotas ?? {}).length).toBeLessThan(20);
  });

  test('replace compares the stored revision: 0 is "none stored", a document without one never matches', () => {
    const source = memoryConfigSource();
    expect(source.replace('x', 1, '{"version":1,"revision":2,"updatedAt":0}')).toBe(false);
    expect(source.replace('x', 0, '{"version":1,"revision":1,"updatedAt":0}')).toBe(true);
    expect(source.replace('x', 0, '{"version":1,"revision":1,"updatedAt":0}')).toBe(false);
    expect(source.replace('x', 1, '{"version":1,"revision":2,"updatedAt":0}')).toBe(true);
    source.write('y', 'not json');
    expect(source.replace('y', 0, '{}')).toBe(false);
  });
});
