import { describe } from './describe.js';
import { SluiceError } from './errors.js';

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
  if (identity.length <= MAX_VERBATIM_IDENTITY && identity.charCodeAt(0) !== CLOSE_BRACE && isWellFormed(identity)) {
    return identity;
  }
  // The hashed form is always longer than MAX_VERBATIM_IDENTITY, so it can never equal a verbatim identity's key.
  // It is used for long identities, for lone surrogates (UTF-8 would turn different ones into the same bytes in
  // Redis and SQLite) and for a leading '}' (an empty Redis Cluster hash tag would scatter the identity's keys).
  // Built code unit by code unit: a `slice` would be a view that keeps the whole identity alive for as long as
  // the key lives (a 15,000-unit identity held 15 KB in the memory store instead of about 0.8 KB).
  const codes = new Array<number>(MAX_VERBATIM_IDENTITY);
  for (let i = 0; i < MAX_VERBATIM_IDENTITY; i++) {
    const code = i < identity.length ? identity.charCodeAt(i) : UNDERSCORE;
    codes[i] = code === OPEN_BRACE || code === CLOSE_BRACE || (code >= 0xd800 && code <= 0xdfff) ? UNDERSCORE : code;
  }
  return `${String.fromCharCode(...codes)}#${hash53(identity, 1).toString(36)}${hash53(identity, 2).toString(36)}`;
}

const UNDERSCORE = 0x5f;
const OPEN_BRACE = 0x7b;

const CLOSE_BRACE = 0x7d;
const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;

function isWellFormed(text: string): boolean {
  // Most identities are ASCII: skip the regular expression unless a surrogate could be present.
  for (let i = 0; i < text.length; i++) {
    if (text.charCodeAt(i) >= 0xd800 && text.charCodeAt(i) <= 0xdfff) return !LONE_SURROGATE.test(text);
  }
  return true;
}
