import type { MemoryStore } from '../../src/index.js';

/**
 * The base keys a memory store holds, most recently used first. With `now`, expired identities are purged first,
 * so the answer is "still live at now".
 */
export function heldKeys(store: MemoryStore, now?: number): string[] {
  if (now !== undefined) store.purgeExpired(now);
  return store.keys();
}
