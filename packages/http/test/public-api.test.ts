// The runtime surface of @sluice/http, listed name by name so it changes only on purpose: the root export is what
// an application or a framework adapter calls, `@sluice/http/ip` is the address parsing under `clientIpResolver`.
import { describe, expect, test } from 'vitest';
import * as rootSource from '../src/index.js';
import * as ipSource from '../src/ip-api.js';

const ROOT = [
  'BackgroundHooks',
  'HEADER_STYLES',
  'HTTP_OPTION_NAMES',
  'PLATFORM_HEADERS',
  'PROBLEM_CONTENT_TYPE',
  'PROBLEM_TYPES',
  'REFUSAL_STATUS',
  'addressLost',
  'applyHeaders',
  'ceilSeconds',
  'checkOptionsObject',
  'checkStackLayers',
  'clientIpResolver',
  'createHandler',
  'headersTarget',
  'heldUntilEnd',
  'nodeHeaderTarget',
  'problemFor',
  'rateLimitFields',
  'readHeader',
  'releasingBody',
  'runStackLayers',
  'sfString',
  'stackRefusal',
  'throttledWarning',
  'toResponse',
  'writeHeaders',
];

const IP = [
  'NAMED_RANGES',
  'compileRanges',
  'embeddedIpv4',
  'formatIp',
  'inPrefix',
  'maskIp',
  'parseAddressText',
  'parseForwarded',
  'parseIp',
  'parseIpv4',
  'parseIpv6',
  'parseRange',
  'parseXForwardedFor',
];

const names = (module: object) => Object.keys(module).filter((name) => name !== 'default').sort();

describe('public API', () => {
  test('the root export (src/index.ts) is exactly the handler, client identity, header and response API', () => {
    expect(names(rootSource)).toEqual(ROOT);
  });

  test('the /ip export (src/ip-api.ts) is exactly the address parsing API', () => {
    expect(names(ipSource)).toEqual(IP);
  });

  test('the two share no runtime name', () => {
    expect(ROOT.filter((name) => IP.includes(name))).toEqual([]);
  });

  test('the built ESM entries (dist/index.js, dist/ip.js) export the same names', async () => {
    expect(names(await import('../dist/index.js'))).toEqual(ROOT);
    expect(names(await import('../dist/ip.js'))).toEqual(IP);
  });
});
