import { MAX_VERBATIM_IDENTITY, identityKey } from './identity.js';

/** Identities per generation of the key cache: two generations hold at most twice this many keys. */
const KEY_CACHE_SIZE = 32768;

/**
 * The store key of an identity, `prefix:name:{identity}`. Building it makes a rope string, and V8 flattens and
 * hashes a rope in its runtime on its first Map lookup (about 200 ns, the largest cost of a memory-store
 * decision); handing an in-process store the same string again for a recent identity keeps its cached hash.
 * Kept only for synchronous and memory-first stores (`cached`; for others a remote round trip dwarfs it) and for
 * identities short enough to be kept verbatim, in two generations of at most KEY_CACHE_SIZE identities each, so
 * its memory is bounded.
 */
export class KeyCache {
  private keys = new Map<string, string>();
  private previous = new Map<string, string>();

  constructor(
    private readonly keyPrefix: string,
    private readonly cached: boolean,
  ) {}

  keyFor(identity: string): string {
    if (!this.cached) return this.keyPrefix + identityKey(identity) + '}';
    let key = this.keys.get(identity);
    if (key !== undefined) return key;
    key = this.previous.get(identity) ?? this.keyPrefix + identityKey(identity) + '}';
    if (identity.length > MAX_VERBATIM_IDENTITY) return key;
    if (this.keys.size >= KEY_CACHE_SIZE) {
      this.previous = this.keys;
      this.keys = new Map();
    }
    this.keys.set(identity, key);
    return key;
  }
}
