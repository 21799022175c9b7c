/**
 * The contract a store implements to keep a deny list in a structure of its own, beside the configuration
 * document (config/source.ts): a list of 100,000 entries changes one entry at a time, and each change travels and
 * applies as that entry, never as a rewrite and re-parse of the whole list.
 *
 * What a store holds per limiter name:
 * - the entries, one text per `match` (an entry's JSON: `{ "match": "203.0.113.0/24", "until": …, "reason": … }`);
 * - where the list is: an `epoch`, a name for one life of the structure (drawn afresh when a store that lost it
 *   creates it again), and a `version` that counts changes within it;
 * - the last `DENY_LOG_LENGTH` changes, each as its text (deny/change.ts), so a watcher that missed a few reads
 *   those instead of the whole list.
 * Sources move text and do not check it: the watcher and the writers check every entry (deny/entries.ts), so an
 * entry written by anything else is skipped with one warning rather than trusted.
 */
import type { DenyEntry } from './entries.js';
import type { Unsubscribe } from '../shared/types.js';

/** Where a deny list is: one life of the stored structure (`epoch`) and the changes made in it (`version`). */
export interface DenyListVersion {
  readonly epoch: string;
  readonly version: number;
}

/**
 * One change to a deny list, applied in this order and in one atomic step: `clear` drops every entry, `remove`
 * drops entries by `match`, `add` stores entries (replacing the one with the same `match`).
 */
export interface DenyListChange {
  readonly clear?: boolean;
  readonly remove?: readonly string[];
  readonly add?: readonly DenyEntry[];
  /**
   * Epoch ms: after the change, the store removes up to DENY_EXPIRE_MAX entries whose `until` is at or before it,
   * as a change of their own (the next version, announced like any other), so a list of temporary blocks
   * (createAutoDeny's, `--for`) does not grow without end. The writers send their clock's now. Not part of the change's text.
   */
  readonly expireBefore?: number;
}

/** What `change` answers: the version it made, and how many of the `remove` matches were held (where the store can say). */
export interface DenyChangeResult extends DenyListVersion {
  readonly removed?: number;
}

/** What `readDenyChanges` answers. */
export interface DenyChangesRead {
  /** Where the stored list is now; undefined when no structure is stored (never written, or lost by the store). */
  readonly version: DenyListVersion | undefined;
  /**
   * The texts of the changes after `since`, oldest first, when `since` is of the current epoch and the log still
   * holds every one of them; undefined when the reader must read the list whole (readDenyPage).
   */
  readonly changes: readonly string[] | undefined;
}

/** One page of a whole-list read. */
export interface DenyPage {
  /** Entries' texts, in no particular order. */
  readonly entries: readonly string[];
  /** Where to read the next page from; `'0'` when this page is the last. */
  readonly cursor: string;
  /** Where the list was when the page was read (undefined: no structure stored). */
  readonly version: DenyListVersion | undefined;
}

/**
 * A store's deny list structure, `configSource.deny`. Each method may answer synchronously or with a promise.
 * `@sluice/redis`, `@sluice/upstash`, `@sluice/sqlite` and `@sluice/memory` implement it.
 */
export interface DenyListSource {
  /**
   * Applies `change` in one atomic step: creates the structure (a fresh epoch, version 0) when none is stored,
   * applies the change, adds one to the version, keeps the change's text (deny/change.ts) in the log (the last
   * DENY_LOG_LENGTH) and announces it to subscribers. Answers the version the change made.
   */
  change(name: string, change: DenyListChange): DenyChangeResult | PromiseLike<DenyChangeResult>;
  /** Where the list is, and the changes after `since` when they can be read one by one (see DenyChangesRead). */
  readChanges(name: string, since: DenyListVersion | undefined): DenyChangesRead | PromiseLike<DenyChangesRead>;
  /**
   * The entries a page at a time, about `count` per page: start at cursor `'0'`, go on with each page's cursor
   * until it is `'0'` again. An entry changed during the read may show in its old or its new state, or not at all:
   * a reader reads the changes after the first page's version once it is done, and applies them over the pages.
   */
  readPage(name: string, cursor: string, count: number): DenyPage | PromiseLike<DenyPage>;
  /**
   * Calls `onChange` with the text of each change as it is made, where the store can push (Redis pub/sub, the
   * memory source); the watcher applies a change that follows the version it holds, and reads the changes
   * otherwise. `onChange('')`, with no text, means changes may have been missed (the Redis source's subscriber
   * connection came back from a reconnect, and what was announced meanwhile reached no one): read the changes.
   * Without it, the watcher's periodic `readChanges` is how changes arrive.
   */
  subscribe?(name: string, onChange: (text: string) => void): Unsubscribe | PromiseLike<Unsubscribe>;
}

/** Expired entries a store removes after one change (`expireBefore`): a backlog goes a hundred per change. */
export const DENY_EXPIRE_MAX = 100;
/** Changes a store keeps for watchers that fall behind: one who missed more reads the list whole. */
export const DENY_LOG_LENGTH = 1024;
/**
 * The largest change a writer sends in one piece: a feed of 100,000 entries goes as 200 changes, each a few
 * milliseconds of work for an instance (parse, check, apply), so no change holds its event loop for long.
 */
export const DENY_CHANGE_MAX = 500;
