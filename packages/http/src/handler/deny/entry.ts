/**
 * How a deny list entry is read (deny-matcher.ts puts it in place). An entry's `match` is an IP address or CIDR block
 * (`203.0.113.0/24`, `2001:db8::/56`, also with the identity prefix `ip:`), else an identity, exactly (`user:42`).
 * An IPv6 block narrower than the client identity's IPv6 prefix (a single address, a /64 under the default /56) is
 * widened to that prefix, so a client cannot step out of it by changing its interface id; an IPv4-mapped block
 * (`::ffff:203.0.113.0/120`) is the IPv4 block it wraps, as addresses are read. A match written with only the
 * characters of an address that parses as none is malformed, not an identity.
 */
import type { DenyEntry } from '@sluice/core/config';
import { maskIp } from '../../ip/address.js';
import { parseRange } from '../../ip/range.js';

/**
 * Longest `reason` kept (core's limit; core checks lists set by configure and drops bad entries from the shared
 * store, so what follows is defence against a list that bypassed it); a longer one is cut, not a reason to drop the denial.
 */
export const MAX_REASON = 200;
/** Characters an IP address or block is written with: such a `match` that does not parse is malformed, not an identity. */
const ADDRESS_LIKE = /^[0-9a-fA-F:./]+$/;

/** What `placeMatch` finds a match to be. */
export const IDENTITY = 0;
export const V4 = 4;
export const V6 = 6;
export const MALFORMED = -1;

/** Where a block falls: its group's prefix length and its network, masked (IPv4: `high` only; IPv6: the first 64 bits). */
export interface MatchPlace {
  length: number;
  high: number;
  low: number;
}

/** IDENTITY, MALFORMED, or V4 / V6 with the block's place written into `place`. */
export function placeMatch(match: string, ipv6Prefix: number, place: MatchPlace): number {
  const text = match.startsWith('ip:') ? match.slice(3) : match;
  if (!ADDRESS_LIKE.test(text) || !/[.:/]/.test(text)) return IDENTITY;
  const range = parseRange(text);
  if (range === undefined) return MALFORMED;
  if (range.network.version === 4) {
    place.length = range.prefixLength;
    place.high = word(range.network.bytes, 0) & maskOf(range.prefixLength);
    return V4;
  }
  const length = Math.min(range.prefixLength, ipv6Prefix);
  const network = maskIp(range.network, length).bytes;
  place.length = length;
  place.high = word(network, 0);
  place.low = word(network, 4);
  return V6;
}

/** The entry as it will be matched, or what is wrong with it. */
export function readEntry(raw: unknown): DenyEntry | string {
  if (typeof raw !== 'object' || raw === null) return `an entry must be an object { match, until?, reason? }, got ${typeof raw}`;
  const { match, until, reason } = raw as Partial<Record<keyof DenyEntry, unknown>>;
  if (typeof match !== 'string' || match.trim() === '' || match !== match.trim()) {
    return `match must be a non-empty identity or IP block without surrounding spaces, got ${JSON.stringify(match) ?? typeof match}`;
  }
  if (until !== undefined && (typeof until !== 'number' || !Number.isFinite(until))) {
    return `until must be epoch milliseconds, got ${JSON.stringify(until) ?? typeof until}`;
  }
  if (reason === undefined || (typeof reason === 'string' && reason.length <= MAX_REASON)) return raw as DenyEntry;
  return { ...(raw as DenyEntry), reason: typeof reason === 'string' ? reason.slice(0, MAX_REASON) : undefined };
}

/** Four bytes from `offset` as a signed 32-bit integer (a small integer in V8: Map keys stay unboxed). */
export function word(bytes: Uint8Array, offset: number): number {
  return (bytes[offset]! << 24) | (bytes[offset + 1]! << 16) | (bytes[offset + 2]! << 8) | bytes[offset + 3]!;
}

/** The first `length` (0 to 32) bits set, as a signed 32-bit integer. */
export function maskOf(length: number): number {
  return length === 0 ? 0 : (-1 << (32 - length)) | 0;
}
