// The runtime surface of @sluice/http, listed name by name so it changes only on purpose: the root export is what
// an application calls, `@sluice/http/ip` is the address parsing under `clientIpResolver`, `@sluice/http/fetch` the
// throttled fetch for outbound calls, and `@sluice/http/adapter` the kit the framework adapters are built from.
import { describe, expect, test } from 'vitest';
import * as adapterSource from '../src/adapter/index.js';
import * as fetchSource from '../src/fetch/index.js';
import * as rootSource from '../src/index.js';
import * as ipSource from '../src/ip/index.js';

const ROOT = ['PLATFORM_HEADERS', 'applyHeaders', 'clientIpResolver', 'createHandler', 'matchDenyList', 'toResponse'];

const ADAPTER = [
  'BackgroundHooks',
  'HTTP_OPTION_NAMES',
  'addressLost',
  'checkOptionsObject',
  'checkStackLayers',
  'heldUntilEnd',
  'nodeHeaderTarget',
  'releasingBody',
  'runStackLayers',
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
  test('the root export (src/index.ts) is exactly the application API: the handler, client identity, deny list matcher and web response', () => {
    expect(names(rootSource)).toEqual(ROOT);
  });

  test('the /ip export (src/ip/index.ts) is exactly the address parsing API', () => {
    expect(names(ipSource)).toEqual(IP);
  });

  test('the /fetch export (src/fetch/index.ts) is exactly the throttled fetch', () => {
    expect(names(fetchSource)).toEqual(FETCH);
  });

  test("the /adapter export (src/adapter/index.ts) is exactly the framework adapters' kit", () => {
    expect(names(adapterSource)).toEqual(ADAPTER);
  });

  test('no two entries share a runtime name', () => {
    const all = [...ROOT, ...IP, ...FETCH, ...ADAPTER];
    expect(new Set(all).size).toBe(all.length);
  });

  test('the built ESM entries (dist/index.js, dist/ip.js, dist/fetch.js, dist/adapter.js) export the same names', async () => {
    expect(names(await import('../dist/index.js'))).toEqual(ROOT);
    expect(names(await import('../dist/ip.js'))).toEqual(IP);
    expect(names(await import('../dist/fetch.js'))).toEqual(FETCH);
    expect(names(await import('../dist/adapter.js'))).toEqual(ADAPTER);
  });
});
