import type { StepOperation } from '../algorithms/algorithm.js';
import { MAX_VERBATIM_IDENTITY, identityKey } from '../shared/identity.js';
import type { Rule } from '../algorithms/rules.js';
import type { FastRequest } from '../store/store.js';

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

/**
 * A fast-path request (see FastRequest in store/store.ts). Its key is built on first read: a store that holds the
 * identity finds it by the identity alone, and building `prefix:name:{identity}` makes a rope string that V8
 * flattens and hashes on its first Map lookup, the largest cost of an in-process decision.
 *
 * One is made per decision, so its fields are `declare`d and written once, in the constructor: declared class
 * fields (parameter properties too) are first defined as `undefined` under ES2022 semantics, by an initializer
 * that runs per instance before the constructor writes each of them again.
 */
export class IdentityRequest implements FastRequest {
  declare readonly identity: string;
  declare readonly rules: readonly Rule[];
  declare readonly cost: number;
  declare readonly operation: StepOperation;
  declare readonly now: number;
  declare private readonly keyPrefix: string;
  declare private builtKey: string | undefined;

  constructor(identity: string, keyPrefix: string, rules: readonly Rule[], cost: number, operation: StepOperation, now: number) {
    this.identity = identity;
    this.rules = rules;
    this.cost = cost;
    this.operation = operation;
    this.now = now;
    this.keyPrefix = keyPrefix;
    this.builtKey = undefined;
  }

  get key(): string {
    return (this.builtKey ??= this.keyPrefix + identityKey(this.identity) + '}');
  }
}
