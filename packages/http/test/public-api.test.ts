// The runtime surface of @sluice/http, listed name by name so it changes only on purpose: the root export is what
// an application or a framework adapter calls, `@sluice/http/ip` is the address parsing under `clientIpResolver`,
// `@sluice/http/fetch` the throttled fetch for outbound calls.
import { describe, expect, test } from 'vitest';
import * as fetchSource from '../src/fetch-api.js';
import * as rootSource from '../src/index.js';
import * as ipSource from '../src/ip-api.js';

const ROOT = [
  'BackgroundHooks',
  'HTTP_OPTION_NAMES',
  'PLATFORM_HEADERS',
  'addressLost',
  'applyHeaders',
  'checkOptionsObject',
  'checkStackLayers',
  'clientIpResolver',
  'createHandler',
  'heldUntilEnd',
  'matchDenyList',
  'nodeHeaderTarget',
  'releasingBody',
  'runStackLayers',
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

const FETCH = ['createThrottledFetch', 'pushBack', 'thirdPartyLimit'];

const names = (module: object) =>
  Object.keys(module)
    .filter((name) => name !== 'default')
    .sort();

describe('public API', () => {
  test('the root export (src/index.ts) is exactly the handler, client identity, header and response API', () => {
    expect(names(rootSource)).toEqual(ROOT);
  });

  test('the /ip export (src/ip-api.ts) is exactly the address parsing API', () => {
    expect(names(ipSource)).toEqual(IP);
  });

  test('the /fetch export (src/fetch-api.ts) is exactly the throttled fetch', () => {
    expect(names(fetchSource)).toEqual(FETCH);
  });

  test('no two entries share a runtime name', () => {
    const all = [...ROOT, ...IP, ...FETCH];
    expect(new Set(all).size).toBe(all.length);
  });

  test('the built ESM entries (dist/index.js, dist/ip.js, dist/fetch.js) export the same names', async () => {
    expect(names(await import('../dist/index.js'))).toEqual(ROOT);
    expect(names(await import('../dist/ip.js'))).toEqual(IP);
    expect(names(await import('../dist/fetch.js'))).toEqual(FETCH);
  });
});
