/**
 * What an operator may give as a deny entry, from `sluice config deny add` and from the dashboard's form alike: the
 * one place that answers "what is accepted", and how a stored entry reads back.
 *
 * A `match` is one of:
 * - an IP address or CIDR block, optionally after `ip:` (`203.0.113.7`, `203.0.113.0/24`, `2001:db8::/56`): it must
 *   parse (`@sluice/http/ip`), and a block must have no bits set past its prefix (`10.9.8.7/24` is refused, naming
 *   `10.9.8.0/24`: the block would silently match more than the address it was written with);
 * - an identity with a prefix (`user:42`, `key:abc`): a name, a colon, then the rest;
 * - any other identity, exactly as the limiter sees it (an API key), only when said so (`--identity`, or the form's
 *   "identity" box), so that a mistyped address never becomes an identity that matches nobody.
 * Refused whatever is said: text with spaces around it or empty, text with a `/` that is not a block, and text
 * written like an address that is not one (`1.2.3`, `10.0.0.1O`, `2001:db8::1%eth0`, `[2001:db8::1]`).
 * A duration (`--for`) is core's grammar, from 1 ms to ten years; longer is a block until removed.
 */
import { SluiceError } from '@sluice/core';
import { durationOption } from '@sluice/core/internal';
import { formatIp, parseIp, parseRange } from '@sluice/http/ip';

/** What a `match` is: an identity, an IPv4 or IPv6 address or block, or (a stored entry only) neither. */
export type DenyKind = 'ident' | 'IPv4' | 'IPv6' | 'invalid';

/** Longest `--for`: ten years. A longer block is one until removed (leave `--for` out). */
export const MAX_DENY_FOR_MS = 3_650 * 86_400_000;

/** Characters an IP address or block is written with (the HTTP layer's test): such a match must parse. */
const ADDRESS_LIKE = /^[0-9a-fA-F:./]+$/;
/** An identity that says it is one: a name (a letter, then letters, digits, `_`, `-`, `.`), a colon, the rest. */
const PREFIXED_IDENTITY = /^[A-Za-z][\w.-]*:./;
/** What the accepted forms are, for every refusal. */
const FORMS =
  'give an address (203.0.113.7, 2001:db8::1), a block (203.0.113.0/24 with a prefix of 0 to 32, 2001:db8::/56 with 0 to 128, optionally after ip:), an identity with a prefix (user:42, key:abc), or any other identity with --identity (an API key)';

/** How the HTTP layer reads a stored `match`: an address or block when written with address characters, else an identity. */
export function denyKind(match: string): DenyKind {
  const text = match.startsWith('ip:') ? match.slice(3) : match;
  if (!ADDRESS_LIKE.test(text) || !/[.:/]/.test(text)) return 'ident';
  const range = parseRange(text);
  if (range === undefined) return 'invalid';
  return range.network.version === 4 ? 'IPv4' : 'IPv6';
}

/**
 * Checks a `match` given to add an entry and says what it is; a refusal is INVALID_OPTION naming `field` and the
 * accepted forms. `identity`: the operator said it is an identity (`--identity`).
 */
export function checkMatch(match: string, options: { identity?: boolean; field?: string } = {}): DenyKind {
  const field = options.field ?? '<match>';
  const refuse = (why: string) => new SluiceError('INVALID_OPTION', `${field} ${JSON.stringify(match)} ${why}; ${FORMS}`);
  if (match.trim() === '' || match !== match.trim()) throw refuse('is empty or has spaces around it');
  const prefixed = match.startsWith('ip:');
  const text = prefixed ? match.slice(3) : match;
  if (prefixed || looksLikeAddress(text)) {
    if (text.includes('%')) throw refuse('has a zone index (%...), which is not part of a client address');
    const range = parseRange(text);
    if (range === undefined) throw refuse('is written like an IP address or CIDR block but is not one');
    const slash = text.indexOf('/');
    if (slash >= 0) {
      const written = parseIp(text.slice(0, slash));
      const block = `${prefixed ? 'ip:' : ''}${formatIp(range.network)}/${range.prefixLength}`;
      if (written !== undefined && formatIp(written) !== formatIp(range.network)) {
        throw refuse(
          `has bits set past its /${range.prefixLength} prefix, so it would match the whole block ${block}: write the block so, or the address alone`,
        );
      }
    }
    if (options.identity === true) throw refuse('is an IP address or block, which the HTTP layer matches as one: leave out --identity');
    return range.network.version === 4 ? 'IPv4' : 'IPv6';
  }
  if (options.identity === true || PREFIXED_IDENTITY.test(match)) return 'ident';
  throw refuse('is neither an address or block nor an identity with a prefix');
}

/** Text that an operator meant as an address: a `/`, brackets, a zone, address characters alone, or digits.digits. */
function looksLikeAddress(text: string): boolean {
  if (text.includes('/') || text.startsWith('[')) return true;
  const base = text.split('%')[0]!;
  return (ADDRESS_LIKE.test(base) && /[.:]/.test(base)) || /^\d+\.\d/.test(text);
}

/** `--for` (or the form's "for") as the entry's `until`: `now` plus a duration of 1 ms to MAX_DENY_FOR_MS. */
export function denyUntil(value: string, now: number, field: string): number {
  return now + durationOption(value, field, { min: 1, max: MAX_DENY_FOR_MS });
}

/** A deny entry that is not valid, as a lenient read reports it: where it is, its match when it has one, why. */
export interface SkippedDenyEntry {
  readonly index: number;
  readonly match?: string;
  readonly problem: string;
}

/** The report `onBadDenyEntry` of core's readLimiterConfig fills. */
export function skippedDenyEntries(): {
  entries: SkippedDenyEntry[];
  onBadDenyEntry: (index: number, error: SluiceError, entry: unknown) => void;
} {
  const entries: SkippedDenyEntry[] = [];
  return {
    entries,
    onBadDenyEntry: (index, error, entry) => {
      const match = typeof entry === 'object' && entry !== null ? (entry as { match?: unknown }).match : undefined;
      entries.push({ index, ...(typeof match === 'string' ? { match } : {}), problem: error.detail });
    },
  };
}

/**
 * One warning for every entry left out: how many, the first few, and how to remove them. Empty when none.
 * `structure`: the list is kept in the source's own structure, where a write changes only the entries it names (so
 * it does not drop the bad ones, as a rewrite of the document's list does).
 */
export function skippedWarning(skipped: readonly SkippedDenyEntry[], name: string, structure = false): string {
  if (skipped.length === 0) return '';
  const shown = skipped.slice(0, 3).map((entry) => entry.problem);
  const more = skipped.length > 3 ? `; and ${skipped.length - 3} more` : '';
  const entries = skipped.length === 1 ? '1 entry' : `${skipped.length} entries`;
  return `the deny list of ${JSON.stringify(name)} holds ${entries} that ${skipped.length === 1 ? 'is' : 'are'} not valid, left out here as instances leave ${skipped.length === 1 ? 'it' : 'them'} out (${shown.join('; ')}${more}); sluice config deny remove <match> removes one${structure ? '' : ', and any write drops them all'}`;
}
