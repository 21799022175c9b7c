// `@sluice/http/ip`: the address parsing and forwarding-chain reading under `clientIpResolver`, for code that
// reads addresses itself (a log line, an allow list, a custom identity). A handler or an adapter needs none of it.
export { embeddedIpv4, formatIp, inPrefix, maskIp, parseAddressText, parseIp, parseIpv4, parseIpv6 } from './address.js';
export type { AddressTextOptions, IpAddress } from './address.js';
export { compileRanges, NAMED_RANGES, parseRange } from './range.js';
export type { IpRange } from './range.js';
export { parseForwarded, parseXForwardedFor } from './forwarded.js';
export type { MalformedHop } from './forwarded.js';
