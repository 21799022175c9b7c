/**
 * IP address text forms, parsed for real: IPv4 dotted-quad (RFC 791 style, strict) and every IPv6 text form of
 * RFC 4291 section 2.2 (full, `::`-compressed, embedded IPv4). Parsing never splits on a guess: each character is
 * checked, group counts are exact, and anything else is `undefined`, never an exception and never a partial value.
 *
 * Deliberately rejected, because a rate limiter must not read two different clients out of one ambiguous string:
 * IPv4 parts with leading zeros (`010.0.0.1` is octal to inet_aton, decimal to others), shorthand IPv4 (`127.1`),
 * zone ids (`fe80::1%eth0`: see `parseAddressText` for where they are stripped), and brackets or ports (also there).
 */

/** An address as bytes: 4 for IPv4, 16 for IPv6. IPv4-mapped IPv6 (`::ffff:1.2.3.4`) is reported as IPv4. */
export interface IpAddress {
  readonly version: 4 | 6;
  readonly bytes: Uint8Array;
}

/** Longest IPv6 text: `ffff:ffff:ffff:ffff:ffff:ffff:255.255.255.255`. Anything longer is rejected unread. */
const MAX_IPV6_TEXT = 45;

/** Parses a bare address (no brackets, port or zone). IPv4-mapped and NAT64 (64:ff9b::/96) forms become IPv4. */
export function parseIp(text: string): IpAddress | undefined {
  if (text.includes(':')) {
    const bytes = parseIpv6(text);
    if (bytes === undefined) return undefined;
    const v4 = embeddedIpv4(bytes);
    return v4 === undefined ? { version: 6, bytes } : { version: 4, bytes: v4 };
  }
  const bytes = parseIpv4(text);
  return bytes === undefined ? undefined : { version: 4, bytes };
}

/** Strict dotted-quad: four decimal parts 0-255, no leading zeros, nothing else. */
export function parseIpv4(text: string): Uint8Array | undefined {
  const length = text.length;
  if (length < 7 || length > 15) return undefined;
  const bytes = new Uint8Array(4);
  let part = 0;
  let value = 0;
  let digits = 0;
  for (let i = 0; i <= length; i++) {
    const code = i < length ? text.charCodeAt(i) : 46; // a virtual '.' closes the last part
    if (code >= 48 && code <= 57) {
      if (digits === 1 && value === 0) return undefined; // leading zero
      value = value * 10 + (code - 48);
      digits++;
      if (value > 255) return undefined;
    } else if (code === 46) {
      if (digits === 0 || part > 3) return undefined;
      bytes[part++] = value;
      value = 0;
      digits = 0;
    } else {
      return undefined;
    }
  }
  return part === 4 ? bytes : undefined;
}

/**
 * RFC 4291 section 2.2: eight groups of 1 to 4 hex digits; one `::` standing for one or more zero groups; the
 * last 32 bits may be written as a dotted quad. Returns 16 bytes or undefined.
 */
export function parseIpv6(text: string): Uint8Array | undefined {
  const length = text.length;
  if (length < 2 || length > MAX_IPV6_TEXT) return undefined;
  const groups: number[] = [];
  let compressAt = -1;
  let i = 0;
  if (text.charCodeAt(0) === 58) {
    // A leading colon is only legal as the start of '::'.
    if (text.charCodeAt(1) !== 58) return undefined;
    compressAt = 0;
    i = 2;
    if (i === length) return expand(groups, compressAt);
  }
  while (i < length) {
    const start = i;
    let value = 0;
    while (i < length && i - start < 5) {
      const digit = hexValue(text.charCodeAt(i));
      if (digit < 0) break;
      value = value * 16 + digit;
      i++;
    }
    const digits = i - start;
    if (i < length && text.charCodeAt(i) === 46) {
      // Dotted quad: only as the final 32 bits, and only where two groups still fit.
      if (digits === 0 || groups.length > 6) return undefined;
      const v4 = parseIpv4(text.slice(start));
      if (v4 === undefined) return undefined;
      groups.push((v4[0]! << 8) | v4[1]!, (v4[2]! << 8) | v4[3]!);
      i = length;
      break;
    }
    if (digits === 0 || digits > 4) return undefined;
    groups.push(value);
    if (groups.length > 8) return undefined;
    if (i === length) break;
    if (text.charCodeAt(i) !== 58) return undefined;
    i++;
    if (i === length) return undefined; // a trailing single ':'
    if (text.charCodeAt(i) === 58) {
      if (compressAt >= 0) return undefined; // a second '::'
      compressAt = groups.length;
      i++;
    }
  }
  return expand(groups, compressAt);
}

function expand(groups: readonly number[], compressAt: number): Uint8Array | undefined {
  if (compressAt < 0 ? groups.length !== 8 : groups.length > 7) return undefined;
  const bytes = new Uint8Array(16);
  const tail = compressAt < 0 ? 0 : groups.length - compressAt;
  for (let g = 0; g < groups.length; g++) {
    // Groups after '::' are right-aligned; the gap between stays zero.
    const slot = compressAt >= 0 && g >= compressAt ? 8 - tail + (g - compressAt) : g;
    bytes[slot * 2] = groups[g]! >> 8;
    bytes[slot * 2 + 1] = groups[g]! & 0xff;
  }
  return bytes;
}

function hexValue(code: number): number {
  if (code >= 48 && code <= 57) return code - 48;
  if (code >= 97 && code <= 102) return code - 87;
  if (code >= 65 && code <= 70) return code - 55;
  return -1;
}

/**
 * The IPv4 address inside an IPv6 one that is only a wrapper around it: IPv4-mapped `::ffff:0:0/96` (what a
 * dual-stack socket reports for an IPv4 peer) and the NAT64 well-known prefix `64:ff9b::/96` (RFC 6052), where
 * grouping by IPv6 prefix would put every IPv4 client behind the translator into one bucket.
 */
export function embeddedIpv4(bytes: Uint8Array): Uint8Array | undefined {
  const mapped = isZero(bytes, 0, 10) && bytes[10] === 0xff && bytes[11] === 0xff;
  const nat64 = bytes[0] === 0x00 && bytes[1] === 0x64 && bytes[2] === 0xff && bytes[3] === 0x9b && isZero(bytes, 4, 12);
  return mapped || nat64 ? bytes.slice(12, 16) : undefined;
}

function isZero(bytes: Uint8Array, from: number, to: number): boolean {
  for (let i = from; i < to; i++) if (bytes[i] !== 0) return false;
  return true;
}

/** Canonical text: dotted quad, or RFC 5952 for IPv6 (lowercase, no leading zeros, longest zero run as `::`). */
export function formatIp(address: IpAddress): string {
  const b = address.bytes;
  if (address.version === 4) return `${b[0]}.${b[1]}.${b[2]}.${b[3]}`;
  const groups = new Array<number>(8);
  for (let g = 0; g < 8; g++) groups[g] = (b[g * 2]! << 8) | b[g * 2 + 1]!;
  // Longest run of two or more zero groups; the first one wins a tie (RFC 5952 section 4.2.3).
  let bestStart = -1;
  let bestLength = 1;
  for (let g = 0; g < 8;) {
    if (groups[g] !== 0) {
      g++;
      continue;
    }
    let end = g;
    while (end < 8 && groups[end] === 0) end++;
    if (end - g > bestLength) {
      bestStart = g;
      bestLength = end - g;
    }
    g = end;
  }
  if (bestStart < 0) return groups.map((g) => g.toString(16)).join(':');
  const head = groups
    .slice(0, bestStart)
    .map((g) => g.toString(16))
    .join(':');
  const tail = groups
    .slice(bestStart + bestLength)
    .map((g) => g.toString(16))
    .join(':');
  return `${head}::${tail}`;
}

/** Zeroes every bit after the first `prefixLength`. */
export function maskIp(address: IpAddress, prefixLength: number): IpAddress {
  const bytes = address.bytes.slice();
  for (let bit = prefixLength; bit < bytes.length * 8; bit++) {
    bytes[bit >> 3]! &= ~(0x80 >> (bit & 7));
  }
  return { version: address.version, bytes };
}

/** Whether the first `prefixLength` bits of `address` equal those of `network` (same version only). */
export function inPrefix(address: IpAddress, network: IpAddress, prefixLength: number): boolean {
  if (address.version !== network.version) return false;
  const a = address.bytes;
  const n = network.bytes;
  const whole = prefixLength >> 3;
  for (let i = 0; i < whole; i++) if (a[i] !== n[i]) return false;
  const rest = prefixLength & 7;
  if (rest === 0) return true;
  const mask = (0xff << (8 - rest)) & 0xff;
  return (a[whole]! & mask) === (n[whole]! & mask);
}

export interface AddressTextOptions {
  /** Accept `1.2.3.4:80` and `[::1]:80` and drop the port. */
  readonly allowPort: boolean;
  /** Strip an IPv6 zone id (`fe80::1%eth0`). Otherwise an address with one is rejected. */
  readonly stripZone: boolean;
}

/**
 * An address as it appears on the wire: optionally bracketed (`[::1]`), optionally with a port (stripped), and
 * for socket addresses optionally with a zone id (stripped: it names the local interface, not the client).
 * Surrounding whitespace is allowed, nothing else.
 */
export function parseAddressText(raw: string, options: AddressTextOptions): IpAddress | undefined {
  let text = raw.trim();
  if (text.length === 0) return undefined;
  if (text.charCodeAt(0) === 91) {
    // [v6] or [v6]:port
    const close = text.indexOf(']');
    if (close < 0) return undefined;
    const rest = text.slice(close + 1);
    if (rest.length > 0 && !(options.allowPort && rest.charCodeAt(0) === 58 && isPort(rest.slice(1)))) return undefined;
    text = text.slice(1, close);
    if (!text.includes(':')) return undefined; // brackets hold IPv6 only
  } else {
    const firstColon = text.indexOf(':');
    if (firstColon >= 0 && firstColon === text.lastIndexOf(':')) {
      // Exactly one colon: an IPv4 address with a port (a bare IPv6 address has at least two).
      if (!options.allowPort || !isPort(text.slice(firstColon + 1))) return undefined;
      text = text.slice(0, firstColon);
      if (text.includes('.') === false) return undefined;
      const bytes = parseIpv4(text);
      return bytes === undefined ? undefined : { version: 4, bytes };
    }
  }
  const percent = text.indexOf('%');
  if (percent >= 0) {
    if (!options.stripZone || percent === text.length - 1 || !text.includes(':')) return undefined;
    text = text.slice(0, percent);
  }
  return parseIp(text);
}

function isPort(text: string): boolean {
  if (text.length === 0 || text.length > 5) return false;
  let value = 0;
  for (let i = 0; i < text.length; i++) {
    const code = text.charCodeAt(i);
    if (code < 48 || code > 57) return false;
    value = value * 10 + (code - 48);
  }
  return value <= 65535;
}
