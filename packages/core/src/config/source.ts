import type { DenyListSource } from '../deny/source.js';
import type { Unsubscribe } from '../shared/types.js';

export type { Unsubscribe } from '../shared/types.js';

/**
 * The contract a store implements to hold the runtime configuration documents (config/document.ts), one per
 * limiter name: what `watchConfig` reads and subscribes to, and what the writers (config/writers.ts) write through.
 */

/**
 * Where a store keeps the documents, one per limiter name. Any method may answer synchronously or with a promise.
 * `@sluice/redis`, `@sluice/upstash`, `@sluice/sqlite` and `@sluice/memory` each make one.
 */
export interface ConfigSource {
  /** The document's text, or undefined when none is stored. */
  read(name: string): string | undefined | PromiseLike<string | undefined>;
  /** Stores the text (already validated by the caller) and tells subscribers. */
  write(name: string, text: string): void | PromiseLike<void>;
  /**
   * Deletes the document outright. Watchers read a missing document as lost (a store restarted empty) and keep
   * their last configuration; an operator's deletion is a tombstone instead, written by deleteLimiterConfig.
   */
  remove(name: string): void | PromiseLike<void>;
  /**
   * Compare and set: stores `text` (and tells subscribers) only if the stored document's `revision` is
   * `expectedRevision` (0: no document is stored), in one atomic step; answers whether it did. Writers use it
   * when present, so that two writers at once cannot lose one's change.
   */
  replace?(name: string, expectedRevision: number, text: string): boolean | PromiseLike<boolean>;
  /**
   * Calls `onChange` when the document may have changed (the watcher then reads it), where the store can push
   * (Redis pub/sub, the memory source). Returns the function that stops it. Without it the watcher's periodic
   * read is the only way a change arrives.
   */
  subscribe?(name: string, onChange: () => void): Unsubscribe | PromiseLike<Unsubscribe>;
  /**
   * The deny list's own structure (deny/source.ts), where the store has one (all four of sluice's): entries change
   * one at a time there. Without it the deny list is the document's `deny` field, rewritten whole on each change.
   */
  readonly deny?: DenyListSource;
}
