/**
 * Reads a deny list kept in a source's own structure (core's DenyListSource) a page at a time, for `deny list`: each
 * entry checked as instances check it (a bad one goes to `onBad`), each match given once (a page read while the list
 * changes may repeat one), and no more pages read than the entries wanted need, plus at most one page to learn
 * whether more follow.
 */
import type { SluiceError } from '@sluice/core';
import { readDenyList, type DenyEntry, type DenyListSource, type DenyListVersion, type DenyPage } from '@sluice/core/config';

/** The most entries asked of the store per page (core's readDenyList asks as many). */
const PAGE_MAX = 1_000;
/** The fewest asked per page: a store's page is a hint (a Redis HSCAN's COUNT), and tiny pages cost a round trip each. */
const PAGE_MIN = 10;

export interface DenyPagesOptions {
  /** How many entries the reader will use (offset + limit; Infinity: all): pages are sized to reach it. */
  wanted: number;
  /** An entry that is not valid, left out; `entry` is its stored JSON (or text). */
  onBad: (index: number, error: SluiceError, entry: unknown) => void;
}

export interface DenyPages {
  /** The next page's entries (possibly none), or undefined once the list has been read to its end. */
  next(): Promise<readonly DenyEntry[] | undefined>;
  /** Whether entries follow the first `used` given out: reads on (buffering a page for next()) only when it must. */
  hasMore(used: number): Promise<boolean>;
  /** Where the list was at the first page; undefined when no structure is stored. */
  readonly version: DenyListVersion | undefined;
  /** Where it was at the last page read. */
  readonly lastVersion: DenyListVersion | undefined;
  /** Whether the read reached the end of the list. */
  readonly ended: boolean;
  /** Distinct valid entries given out so far (the list's size once ended). */
  readonly distinct: number;
}

export function readDenyPages(deny: DenyListSource, name: string, options: DenyPagesOptions): DenyPages {
  const matches = new Set<string>();
  let cursor = '0';
  let started = false;
  let ended = false;
  let version: DenyListVersion | undefined;
  let lastVersion: DenyListVersion | undefined;
  let buffered: DenyEntry[] | undefined;

  const readPage = async (): Promise<DenyEntry[] | undefined> => {
    if (ended) return undefined;
    const want = options.wanted - matches.size + 1;
    const count = Math.max(PAGE_MIN, Math.min(PAGE_MAX, Number.isFinite(want) ? want : PAGE_MAX));
    const page = await deny.readPage(name, cursor, count);
    if (!started) version = page.version;
    started = true;
    lastVersion = page.version;
    cursor = page.cursor;
    if (cursor === '0') ended = true;
    const entries: DenyEntry[] = [];
    for (const entry of await checkedEntries(page, options.onBad)) {
      if (matches.has(entry.match)) continue;
      matches.add(entry.match);
      entries.push(entry);
    }
    return entries;
  };

  return {
    async next() {
      if (buffered !== undefined) {
        const page = buffered;
        buffered = undefined;
        return page;
      }
      if (ended && started) return undefined;
      return readPage();
    },
    async hasMore(used) {
      if (matches.size > used) return true;
      // Pages may come back empty before the end (a Redis HSCAN): read until an entry or the end.
      while (!ended) {
        const page = await readPage();
        if (page !== undefined && page.length > 0) {
          buffered = page;
          return true;
        }
      }
      return false;
    },
    get version() {
      return version;
    },
    get lastVersion() {
      return lastVersion;
    },
    get ended() {
      return ended && buffered === undefined;
    },
    get distinct() {
      return matches.size;
    },
  };
}

/**
 * A page's entries checked by core's readDenyList, given that one page as a whole list: core's one check of an
 * entry (its messages, the ones instances warn with), without checking each through a document of its own.
 */
async function checkedEntries(page: DenyPage, onBad: DenyPagesOptions['onBad']): Promise<DenyEntry[]> {
  const onePage: DenyListSource = {
    readPage: () => ({ ...page, cursor: '0' }),
    change: () => Promise.reject(new Error('not used: a read')),
    readChanges: () => Promise.reject(new Error('not used: a read')),
  };
  const entries = await readDenyList(onePage, 'page', (error, entry) => onBad(-1, error, entry));
  return [...entries.values()];
}
