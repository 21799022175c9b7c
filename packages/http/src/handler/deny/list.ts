/**
 * Compiling a limiter's `deny` entries into the matcher (deny-matcher.ts; how an entry is read: deny-entry.ts), at
 * once or a part at a time. An entry whose `until` is at or before `now` does not match. A malformed entry is left
 * out and listed in `problems`, so it is reported once rather than thrown per request.
 */
import type { DenyEntry } from '@sluice/core/config';
import { MutableDenyMatcher } from './matcher.js';

export type { DenyEntry };

/**
 * Compiles `entries`; `ipv6Prefix` is the client identity's IPv6 grouping (48 to 64). Never throws: what it cannot
 * read is in `problems`.
 */
export function compileDenyList(entries: readonly DenyEntry[], ipv6Prefix: number): MutableDenyMatcher {
  const compiler = new DenyListCompiler(entries, ipv6Prefix);
  compiler.step(entries.length);
  return compiler.finish();
}

/**
 * A compile that can be done a part at a time: `step(n)` reads the next n entries, `finish()` (once every entry is
 * read) builds the matcher. deny-check.ts compiles a long list in parts, between requests, so a new list of
 * 100,000 entries never holds the event loop for the whole compile.
 */
export class DenyListCompiler {
  private readonly matcher: MutableDenyMatcher;
  private next = 0;

  constructor(
    /** The list being compiled. */
    readonly list: readonly DenyEntry[],
    ipv6Prefix: number,
  ) {
    this.matcher = new MutableDenyMatcher(ipv6Prefix);
  }

  /** Whether every entry has been read. */
  get done(): boolean {
    return this.next >= this.list.length;
  }

  /** Reads up to `count` more entries. */
  step(count: number): void {
    const end = Math.min(this.list.length, this.next + count);
    const matcher = this.matcher;
    for (let i = this.next; i < end; i++) matcher.add(this.list[i], i);
    this.next = end;
  }

  /** The matcher of every entry read (call once `done`). */
  finish(): MutableDenyMatcher {
    this.matcher.seal();
    return this.matcher;
  }
}
