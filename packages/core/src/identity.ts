import { SluiceError, describe } from './errors.js';

/**
 * Identities up to this many UTF-16 units are stored verbatim; longer ones as their first MAX_VERBATIM_IDENTITY
 * units plus '#' and a 106-bit hash of the whole, at most 151 units.
 */
export const MAX_VERBATIM_IDENTITY = 128;

/** FNV-1a over UTF-16 code units, 32-bit. Stable across runtimes; used for stagger offsets. */
export function hash32(text: string, seed = 0x811c9dc5): number {
  let h = seed >>> 0;
  for (let i = 0; i < text.length; i++) {
    h ^= text.charCodeAt(i);
    h = Math.imul(h, 0x01000193) >>> 0;
  }
  return h >>> 0;
}

/** A 53-bit hash (cyrb53 construction) for long identities; two seeds give 106 bits. */
function hash53(text: string, seed: number): number {
  let h1 = 0xdeadbeef ^ seed;
  let h2 = 0x41c6ce57 ^ seed;
  for (let i = 0; i < text.length; i++) {
    const ch = text.charCodeAt(i);
    h1 = Math.imul(h1 ^ ch, 2654435761);
    h2 = Math.imul(h2 ^ ch, 1597334677);
  }
  h1 = Math.imul(h1 ^ (h1 >>> 16), 2246822507) ^ Math.imul(h2 ^ (h2 >>> 13), 3266489909);
  h2 = Math.imul(h2 ^ (h2 >>> 16), 2246822507) ^ Math.imul(h1 ^ (h1 >>> 13), 3266489909);
  return 4294967296 * (2097151 & h2) + (h1 >>> 0);
}

/**
 * The identity as it appears inside a key. Any length and any Unicode is accepted; long identities keep a
 * readable prefix and a hash of the whole, so memory per key stays bounded.
 */
export function identityKey(identity: unknown): string {
  if (typeof identity !== 'string' || identity.length === 0) {
    throw new SluiceError('INVALID_IDENTITY', `identity must be a non-empty string, got ${describe(identity)}`);
  }
  if (identity.length <= MAX_VERBATIM_IDENTITY) return identity;
  // The hashed form is always longer than MAX_VERBATIM_IDENTITY, so it can never equal a verbatim identity's key.
  return `${identity.slice(0, MAX_VERBATIM_IDENTITY)}#${hash53(identity, 1).toString(36)}${hash53(identity, 2).toString(36)}`;
}
