/**
 * Who a log line counts against, decided as @sluice/http decides it for a live request: the user id when the line
 * has one (`user:<id>`), else the client IP (`ip:<address>`), an IPv6 client grouped by its /56 (`--ipv6-prefix`,
 * 48 to 64, as `clientIp.ipv6Prefix`) because one subscriber is handed a whole prefix and can rotate through it.
 * Address parsing is @sluice/http/ip's, so a text it rejects there is rejected here.
 *
 * Identities are numbered densely (0, 1, 2, ...) so the replay keeps its per-identity state in arrays.
 */
import { SluiceError } from '@sluice/core';
import { formatIp, maskIp, parseAddressText } from '@sluice/http/ip';
import { utf8Value } from './line-reader.js';
import { ABSENT, TextSliceMap } from './text-slice-map.js';

/** Address text as a socket or a log writes it: a port and brackets allowed (`[::1]:443`), a zone id stripped. */
const LOG_ADDRESS = { allowPort: true, stripZone: true } as const;

/** Raw address texts remembered before the cache is cleared; IPv6 rotation inside a prefix must not grow it forever. */
const IP_CACHE_LIMIT = 1 << 20;

export class IdentityTable {
  /** `user:<id>` or `ip:<key>` for each identity number. */
  readonly names: string[] = [];
  private readonly users = new Map<string, number>();
  private readonly ips = new Map<string, number>();
  /** IPv4 address text to identity number, -1 when the text is not an IP address. */
  private readonly rawIps = new TextSliceMap();
  /** A user id's bytes (one character per byte, as `LineReader` hands lines over) to its identity number. */
  private readonly userBytes = new TextSliceMap();

  constructor(readonly ipv6Prefix = 56) {
    if (!Number.isInteger(ipv6Prefix) || ipv6Prefix < 48 || ipv6Prefix > 64) {
      throw new SluiceError(
        'INVALID_OPTION',
        `ipv6Prefix must be an integer from 48 to 64 (as @sluice/http's clientIp.ipv6Prefix), got ${ipv6Prefix}`,
      );
    }
  }

  get size(): number {
    return this.names.length;
  }

  /** The number of user `id` (a non-empty string, as the HTTP layer's identify hook answers). */
  user(id: string): number {
    const known = this.users.get(id);
    if (known !== undefined) return known;
    const own = ownCopy(id);
    const index = this.names.length;
    this.users.set(own, index);
    this.names.push(`user:${own}`);
    return index;
  }

  /**
   * `user` for the id whose UTF-8 bytes are `text.slice(start, end)`, one character per byte. A known id costs a
   * lookup in the text, no string: bytes and ids correspond one to one (the bytes are valid UTF-8).
   */
  userAt(text: string, start: number, end: number): number {
    const known = this.userBytes.get(text, start, end);
    if (known !== ABSENT) return known;
    const bytes = ownCopy(text.slice(start, end));
    const index = this.user(utf8Value(bytes));
    this.userBytes.set(bytes, index);
    return index;
  }

  /** `ip` for the address text `text.slice(start, end)`; a known IPv4 text costs a lookup in the text, no string. */
  ipAt(text: string, start: number, end: number): number {
    const cached = this.rawIps.get(text, start, end);
    return cached !== ABSENT ? cached : this.ip(text.slice(start, end));
  }

  /** The number of the client at address text `raw`, or -1 when it is not an IP address. */
  ip(raw: string): number {
    const cached = this.rawIps.get(raw, 0, raw.length);
    if (cached !== ABSENT) return cached;
    const address = parseAddressText(raw, LOG_ADDRESS);
    let index = -1;
    if (address !== undefined) {
      const key = address.version === 4 ? formatIp(address) : `${formatIp(maskIp(address, this.ipv6Prefix))}/${this.ipv6Prefix}`;
      const known = this.ips.get(key);
      if (known !== undefined) {
        index = known;
      } else {
        index = this.names.length;
        this.ips.set(key, index);
        this.names.push(`ip:${key}`);
      }
    }
    // IPv6 clients rotate through their prefix, so an IPv6 text rarely comes back: only IPv4 texts are kept.
    if (!raw.includes(':')) {
      if (this.rawIps.size >= IP_CACHE_LIMIT) this.rawIps.clear();
      this.rawIps.set(ownCopy(raw), index);
    }
    return index;
  }
}

/**
 * A copy of `text` that shares no memory with the chunk it was sliced from. V8 keeps a slice of a long string as a
 * view into it, so a map key sliced from a 1 MB chunk would keep the chunk alive: memory would grow with the input,
 * not with the identities. The JSON round trip builds a fresh string and keeps lone surrogates as they are.
 */
function ownCopy(text: string): string {
  return text.length < 13 ? text : (JSON.parse(JSON.stringify(text)) as string);
}
