import { SluiceError } from '@sluice/core';
import { describeValue, integerOption, optionNames, rejectUnknownOptions } from '@sluice/core/internal';
import { parseForwarded, parseXForwardedFor } from '../ip/forwarded.js';
import { formatIp, maskIp, parseAddressText, type IpAddress } from '../ip/address.js';
import { compileRanges } from '../ip/range.js';
import { readHeader, type HttpRequest } from './request.js';

/**
 * Platforms whose edge writes the client address into a header of its own, overwriting whatever the client
 * sent. Safe only when every request reaches the app through that edge (see the README for each).
 */
export type Platform = 'vercel' | 'cloudflare' | 'fly';

export const PLATFORM_HEADERS: Readonly<Record<Platform, readonly string[]>> = {
  vercel: ['x-vercel-forwarded-for', 'x-real-ip'],
  cloudflare: ['cf-connecting-ip'],
  fly: ['fly-client-ip'],
};

export interface ClientIpOptions {
  /**
   * Which peers may speak for the client. `false`: only the socket address counts and forwarding headers are
   * ignored (nothing a client sends can move it to another bucket). A number: that many proxy hops in front of
   * the app (1 = one load balancer). CIDR blocks (or `'loopback'`, `'private'`, `'linklocal'`): the proxies'
   * addresses; the client is the rightmost hop not in them.
   * @default false
   */
  trustProxy?: false | number | string | readonly string[];
  /** Which chain header the trusted proxies write. @default 'x-forwarded-for' */
  header?: 'x-forwarded-for' | 'forwarded';
  /** Read the client address from a platform's own header (see `PLATFORM_HEADERS`). */
  platform?: Platform;
  /**
   * IPv6 clients are limited per prefix of this length, because one subscriber is typically handed a whole /56
   * (or /48, /64) and can rotate through it at will. 48 to 64. @default 56
   */
  ipv6Prefix?: number;
}

/** Where the client address was read from. */
export type AddressSource = 'socket' | 'x-forwarded-for' | 'forwarded' | Platform;

export type ClientIpResult =
  | {
      readonly ok: true;
      readonly address: IpAddress;
      /** The address, or the IPv6 prefix it belongs to: `203.0.113.7`, `2001:db8:1::/56`. */
      readonly key: string;
      /** The rate-limit identity: `ip:` and the key. */
      readonly identity: string;
      readonly source: AddressSource;
    }
  | { readonly ok: false; readonly problem: string };

/** Request data (header values, addresses) in a problem or an error: room for an IPv6 address with a port and a zone. */
const describe = (value: unknown): string => describeValue(value, 60);

const KNOWN = optionNames<ClientIpOptions>({ trustProxy: true, header: true, platform: true, ipv6Prefix: true });
const SOCKET_CACHE_SIZE = 4096;
const SOCKET = { allowPort: false, stripZone: true } as const;
const HOP = { allowPort: true, stripZone: false } as const;

/** Validates the options once and returns the per-request resolver. */
export function clientIpResolver(options: ClientIpOptions = {}): (request: HttpRequest) => ClientIpResult {
  if (typeof options !== 'object' || options === null) {
    throw new SluiceError('INVALID_OPTION', `clientIp must be an object or a function, got ${describe(options)}`);
  }
  rejectUnknownOptions(options, KNOWN, 'clientIp');
  const prefix = integerOption(options.ipv6Prefix ?? 56, 'clientIp.ipv6Prefix', 48, 64);
  const header = options.header ?? 'x-forwarded-for';
  if (header !== 'x-forwarded-for' && header !== 'forwarded') {
    throw new SluiceError('INVALID_OPTION', `clientIp.header must be 'x-forwarded-for' or 'forwarded', got ${describe(header)}`);
  }
  const platform = options.platform;
  if (platform !== undefined && !(platform in PLATFORM_HEADERS)) {
    throw new SluiceError(
      'INVALID_OPTION',
      `clientIp.platform must be one of ${Object.keys(PLATFORM_HEADERS).join(', ')}, got ${describe(platform)}`,
    );
  }
  const trust = compileTrust(options.trustProxy ?? false);

  const keyOf = (address: IpAddress): string =>
    address.version === 4 ? formatIp(address) : `${formatIp(maskIp(address, prefix))}/${prefix}`;
  const found = (address: IpAddress, source: AddressSource): ClientIpResult => {
    const key = keyOf(address);
    return { ok: true, address, key, identity: `ip:${key}`, source };
  };

  const resolve = (request: HttpRequest): ClientIpResult => {
    const rawSocket = request.remoteAddress;
    const socket = rawSocket === undefined ? undefined : parseAddressText(rawSocket, SOCKET);
    if (rawSocket !== undefined && socket === undefined) {
      return { ok: false, problem: `the socket address ${describe(rawSocket)} is not an IP address` };
    }
    if (platform !== undefined && (socket === undefined || trust === undefined || trust(socket, 0))) {
      for (const name of PLATFORM_HEADERS[platform]) {
        const value = readHeader(request.headers, name);
        if (value === undefined) continue;
        const address = parseAddressText(value, HOP);
        return address === undefined
          ? { ok: false, problem: `the ${name} header ${describe(value)} is not one IP address` }
          : found(address, platform);
      }
    }
    if (trust === undefined || (socket !== undefined && !trust(socket, 0))) {
      return socket === undefined ? { ok: false, problem: 'the runtime exposes no client address' } : found(socket, 'socket');
    }
    if (socket === undefined && !trust.byHops) {
      return {
        ok: false,
        problem: 'trustProxy lists proxy addresses but the runtime exposes no socket address to check; use a hop count or a platform',
      };
    }
    // The socket is a trusted proxy (or absent and implied, hop counting only): walk the chain from the right.
    const value = readHeader(request.headers, header);
    // Only the entries up to the first untrusted one are read: what lies left of it (a client's own additions,
    // however broken) changes nothing.
    const hops = value === undefined ? [] : header === 'forwarded' ? parseForwarded(value) : parseXForwardedFor(value);
    let client = socket;
    for (let k = hops.length - 1, hop = 1; k >= 0; k--, hop++) {
      const text = hops[k];
      if (typeof text === 'object' && text !== null) {
        return { ok: false, problem: `the Forwarded header's element ${describe(text.malformed)} (hop ${hop}) is malformed` };
      }
      const address = text === null || text === undefined ? undefined : parseAddressText(text, HOP);
      if (address === undefined) {
        return { ok: false, problem: `hop ${hop} of the ${header} header (${describe(text ?? 'unknown')}) is not an IP address` };
      }
      client = address;
      if (!trust(address, hop)) return found(address, header);
    }
    // Every hop was trusted: the furthest one is the client (a request from inside the trusted network).
    if (client === undefined) return { ok: false, problem: `the runtime exposes no client address and there is no ${header} header` };
    return found(client, client === socket ? 'socket' : header);
  };

  if (trust !== undefined || platform !== undefined) return resolve;
  // Socket address only: the answer depends on that string alone, so recent ones are remembered (results are
  // immutable). Bounded: a flood of distinct addresses just clears the cache now and then.
  const cache = new Map<string, ClientIpResult>();
  return (request) => {
    const text = request.remoteAddress;
    if (text === undefined) return resolve(request);
    let result = cache.get(text);
    if (result === undefined) {
      if (cache.size >= SOCKET_CACHE_SIZE) cache.clear();
      result = resolve(request);
      cache.set(text, result);
    }
    return result;
  };
}

/** `(address, hop)` with hop 0 the socket peer, 1 the rightmost chain entry, and so on. */
interface Trust {
  (address: IpAddress, hop: number): boolean;
  /** Hop counting needs no socket address; CIDR blocks cannot be checked without one. */
  readonly byHops: boolean;
}

function compileTrust(value: unknown): Trust | undefined {
  if (value === false) return undefined;
  if (typeof value === 'number') {
    const hops = integerOption(value, 'clientIp.trustProxy as a hop count', 1, 32);
    return Object.assign((_address: IpAddress, hop: number) => hop < hops, { byHops: true });
  }
  if (typeof value === 'string' || Array.isArray(value)) {
    const entries = typeof value === 'string' ? [value] : (value as readonly string[]);
    if (entries.length === 0) {
      throw new SluiceError('INVALID_OPTION', 'clientIp.trustProxy is an empty list; use false to trust no proxy');
    }
    const contains = compileRanges(entries, 'clientIp.trustProxy');
    return Object.assign((address: IpAddress) => contains(address), { byHops: false });
  }
  throw new SluiceError(
    'INVALID_OPTION',
    `clientIp.trustProxy must be false, a hop count, or CIDR blocks such as ['10.0.0.0/8'], got ${describe(value)}`,
  );
}
