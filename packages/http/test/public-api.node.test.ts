/// <reference types="node" />
// The CommonJS build of every entry exports the same names as the ESM build, and the parsers the root and /ip
// share are one copy (tsup splits them into a chunk): a resolver's address formats with /ip's formatIp.
import { createRequire } from 'node:module';
import { describe, expect, test } from 'vitest';

const require = createRequire(import.meta.url);
const names = (module: object) =>
  Object.keys(module)
    .filter((name) => name !== 'default' && name !== '__esModule')
    .sort();

describe('public API (CommonJS build)', () => {
  test.each(['index', 'ip', 'fetch', 'adapter'])('dist/%s.cjs exports what its ESM build exports', async (entry) => {
    expect(names(require(`../dist/${entry}.cjs`))).toEqual(names(await import(`../dist/${entry}.js`)));
  });

  test.each(['cjs', 'js'])('an address from the root resolver is read by the /ip helpers (dist/*.%s)', async (extension) => {
    const root = extension === 'cjs' ? require('../dist/index.cjs') : await import('../dist/index.js');
    const ip = extension === 'cjs' ? require('../dist/ip.cjs') : await import('../dist/ip.js');
    const resolved = root.clientIpResolver({ trustProxy: 1 })({
      headers: { 'x-forwarded-for': '2001:db8:1:2::99' },
      remoteAddress: '10.0.0.1',
    });
    expect(resolved.ok).toBe(true);
    expect(ip.formatIp(ip.maskIp(resolved.address, 56))).toBe('2001:db8:1::');
  });
});
