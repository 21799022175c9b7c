import { SluiceError } from '@sluice/core';
import { inPrefix, maskIp, parseIp, type IpAddress } from './address.js';

/** An address block, e.g. `10.0.0.0/8` or `fd00::/8`. A bare address is a block of one. */
export interface IpRange {
  readonly network: IpAddress;
  readonly prefixLength: number;
}

/** Named blocks for the places proxies usually live. */
export const NAMED_RANGES: Readonly<Record<string, readonly string[]>> = {
  loopback: ['127.0.0.0/8', '::1/128'],
  /** RFC 1918 private IPv4 and RFC 4193 unique local IPv6: where a load balancer inside a VPC connects from. */
  private: ['10.0.0.0/8', '172.16.0.0/12', '192.168.0.0/16', 'fc00::/7'],
  linklocal: ['169.254.0.0/16', 'fe80::/10'],
};

/**
 * Parses `address/length` or a bare address; an IPv4-mapped IPv6 block (`::ffff:10.0.0.0/104`) becomes the IPv4
 * block it wraps, matching how addresses are read. Returns undefined for anything malformed.
 */
export function parseRange(text: string): IpRange | undefined {
  const slash = text.indexOf('/');
  const address = parseIp(slash < 0 ? text.trim() : text.slice(0, slash).trim());
  if (address === undefined) return undefined;
  const maxLength = address.version === 4 ? 32 : 128;
  let prefixLength = maxLength;
  if (slash >= 0) {
    const lengthText = text.slice(slash + 1).trim();
    if (!/^(0|[1-9]\d{0,2})$/.test(lengthText)) return undefined;
    prefixLength = Number(lengthText);
    // The text was IPv6 but parseIp reported the wrapped IPv4: the length counted the 96-bit wrapper.
    if (address.version === 4 && text.includes(':')) prefixLength -= 96;
    if (prefixLength < 0 || prefixLength > maxLength) return undefined;
  }
  return { network: maskIp(address, prefixLength), prefixLength };
}

/** Builds a membership test from CIDR strings and the names in `NAMED_RANGES`. Throws on a malformed entry. */
export function compileRanges(entries: readonly string[], field: string): (address: IpAddress) => boolean {
  const ranges: IpRange[] = [];
  for (const entry of entries) {
    if (typeof entry !== 'string') {
      throw new SluiceError('INVALID_OPTION', `${field} must hold CIDR strings such as '10.0.0.0/8' or '::1', got a ${typeof entry}`);
    }
    const named = NAMED_RANGES[entry];
    for (const text of named ?? [entry]) {
      const range = parseRange(text);
      if (range === undefined) {
        throw new SluiceError(
          'INVALID_OPTION',
          `${field}: ${JSON.stringify(entry)} is not an address or CIDR block (e.g. '10.0.0.0/8', '2001:db8::/32') nor one of ${Object.keys(NAMED_RANGES).join(', ')}`,
        );
      }
      ranges.push(range);
    }
  }
  return (address) => {
    for (const range of ranges) if (inPrefix(address, range.network, range.prefixLength)) return true;
    return false;
  };
}
