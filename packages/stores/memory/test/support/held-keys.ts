import type { MemoryStore } from '../../src/index.js';

/**
 * The base keys a memory store holds, most recently used first. With `now`, expired identities are purged first,
 * so the answer is "still live at now". The store exposes no key listing, so this reads its LRU directly; a
 * rename of that field fails every test that uses it, loudly.
 */
export function heldKeys(store: MemoryStore, now?: number): string[] {
  if (now !== undefined) store.purgeExpired(now);
  const cache = (store as unknown as { cache?: { keys(): Iterable<string> } }).cache;
  if (cache === undefined || typeof cache.keys !== 'function') throw new Error('heldKeys: MemoryStore no longer keeps its LRU in `cache`');
  return [...cache.keys()];
}
