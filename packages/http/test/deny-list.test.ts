import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { compileDenyList, type DenyEntry } from '../src/handler/deny/list.js';
import { inPrefix, parseIp, type IpAddress } from '../src/ip/address.js';
import { parseRange } from '../src/ip/range.js';

const never = (): number => {
  throw new Error('the clock was read for entries without until');
};

function ip(text: string): IpAddress {
  const address = parseIp(text);
  if (address === undefined) throw new Error(`not an address: ${text}`);
  return address;
}

/** The reason of the entry that denies `address` (undefined: none does). */
function reasonFor(entries: readonly DenyEntry[], address: string, now = never, prefix = 56): string | undefined {
  return compileDenyList(entries, prefix).match(undefined, ip(address), now)?.reason;
}

describe('deny list matcher: IPv4', () => {
  it('matches a /0 to /32 block at its first and last address and not one outside it', () => {
    for (let length = 0; length <= 32; length++) {
      const network = parseRange(`198.51.100.77/${length}`)!;
      const matcher = compileDenyList([{ match: `198.51.100.77/${length}`, reason: `/${length}` }], 56);
      const base =
        ((network.network.bytes[0]! << 24) |
          (network.network.bytes[1]! << 16) |
          (network.network.bytes[2]! << 8) |
          network.network.bytes[3]!) >>>
        0;
      const size = 2 ** (32 - length);
      const text = (n: number) => [n >>> 24, (n >>> 16) & 255, (n >>> 8) & 255, n & 255].join('.');
      expect(matcher.match(undefined, ip(text(base)), never)?.reason).toBe(`/${length}`);
      expect(matcher.match(undefined, ip(text(base + size - 1)), never)?.reason).toBe(`/${length}`);
      if (length > 0) {
        const outside = base + size <= 0xffffffff ? base + size : base - 1;
        expect(matcher.match(undefined, ip(text(outside)), never), `/${length}`).toBeUndefined();
      }
    }
  });

  it('agrees with inPrefix for any block and address (the plain reference)', () => {
    const octet = fc.integer({ min: 0, max: 255 });
    const v4 = fc.tuple(octet, octet, octet, octet).map((o) => o.join('.'));
    fc.assert(
      fc.property(fc.array(fc.tuple(v4, fc.integer({ min: 0, max: 32 })), { minLength: 1, maxLength: 8 }), v4, (blocks, address) => {
        const entries = blocks.map(([a, l]) => ({ match: `${a}/${l}` }));
        const expected = blocks.some(([a, l]) => {
          const range = parseRange(`${a}/${l}`)!;
          return inPrefix(ip(address), range.network, range.prefixLength);
        });
        expect(compileDenyList(entries, 56).match(undefined, ip(address), never) !== undefined).toBe(expected);
      }),
      { numRuns: 300 },
    );
  });

  it('reads a client seen as IPv4-mapped IPv6 as IPv4, and an IPv4-mapped block as the IPv4 block', () => {
    expect(reasonFor([{ match: '203.0.113.0/24', reason: 'v4' }], '::ffff:203.0.113.9')).toBe('v4');
    expect(reasonFor([{ match: '::ffff:203.0.113.0/120', reason: 'mapped' }], '203.0.113.200')).toBe('mapped');
    expect(reasonFor([{ match: '::ffff:203.0.113.0/120' }], '203.0.114.1')).toBeUndefined();
  });
});

describe('deny list matcher: IPv6', () => {
  const entries = [{ match: '2001:db8:aa00::/56', reason: 'range' }];

  it('matches every address inside a /56 and none outside it', () => {
    expect(reasonFor(entries, '2001:db8:aa00::1')).toBe('range');
    expect(reasonFor(entries, '2001:db8:aa00:ff:ffff:ffff:ffff:ffff')).toBe('range');
    expect(reasonFor(entries, '2001:db8:aa00:12::abcd')).toBe('range');
    expect(reasonFor(entries, '2001:db8:aa00:100::1')).toBeUndefined(); // the next /56
    expect(reasonFor(entries, '2001:db8:aa01::1')).toBeUndefined();
    expect(reasonFor(entries, '2001:db8:a9ff:ff00::1')).toBeUndefined();
    expect(reasonFor(entries, '2001:db9:aa00::1')).toBeUndefined();
  });

  it('agrees with inPrefix on the block widened to the identity prefix, for any block and address (the plain reference)', () => {
    const group = fc.integer({ min: 0, max: 0xffff }).map((g) => g.toString(16));
    // Addresses share their first groups often enough for matches: a few fixed heads, random tails.
    const v6 = fc
      .tuple(fc.constantFrom('2001:db8', '2001:db9'), fc.array(group, { minLength: 6, maxLength: 6 }))
      .map(([head, rest]) => `${head}:${rest.join(':')}`);
    const near = fc
      .tuple(fc.constantFrom('2001:db8', '2001:db9'), fc.constantFrom('1', 'a'), fc.constantFrom('0', '1', '100', 'ff00'))
      .map(([head, g, h]) => `${head}:${g}:${h}::1`);
    const address = fc.oneof(v6, near);
    fc.assert(
      fc.property(
        fc.array(fc.tuple(address, fc.integer({ min: 0, max: 128 })), { minLength: 1, maxLength: 6 }),
        address,
        (blocks, client) => {
          const expected = blocks.some(([a, l]) => inPrefix(ip(client), parseRange(`${a}/${Math.min(l, 56)}`)!.network, Math.min(l, 56)));
          const entries = blocks.map(([a, l]) => ({ match: `${a}/${l}` }));
          expect(compileDenyList(entries, 56).match(undefined, ip(client), never) !== undefined).toBe(expected);
        },
      ),
      { numRuns: 300 },
    );
  });

  it('widens a single address to the identity prefix, so a new interface id does not escape', () => {
    const single = [{ match: '2001:db8:1:2:aaaa:bbbb:cccc:dddd', reason: 'one' }];
    expect(reasonFor(single, '2001:db8:1:2::1')).toBe('one');
    expect(reasonFor(single, '2001:db8:1:ff::1')).toBe('one'); // same /56 (2001:db8:1::/56)
    expect(reasonFor(single, '2001:db8:1:100::1')).toBeUndefined(); // the next /56
    // Under a /64 identity prefix, the widening is to the /64.
    expect(reasonFor(single, '2001:db8:1:2:1::', never, 64)).toBe('one');
    expect(reasonFor(single, '2001:db8:1:3::1', never, 64)).toBeUndefined();
  });

  it('keeps wider blocks as written (/0, /32, /48) and tells them apart from IPv4', () => {
    expect(reasonFor([{ match: '::/0', reason: 'all v6' }], '2001:db8::1')).toBe('all v6');
    expect(reasonFor([{ match: '::/0' }], '198.51.100.1')).toBeUndefined();
    expect(reasonFor([{ match: '0.0.0.0/0' }], '2001:db8::1')).toBeUndefined();
    expect(reasonFor([{ match: '2001:db8::/32', reason: '32' }], '2001:db8:ffff:ffff::1')).toBe('32');
    expect(reasonFor([{ match: '2001:db8::/32' }], '2001:db9::1')).toBeUndefined();
    expect(reasonFor([{ match: '2001:db8:5::/48', reason: '48' }], '2001:db8:5:ff00::1')).toBe('48');
    expect(reasonFor([{ match: '2001:db8:5::/48' }], '2001:db8:6::1')).toBeUndefined();
  });
});

describe('deny list matcher: identities, expiry, malformed entries', () => {
  it('matches identities exactly, and reads `ip:` identities as addresses', () => {
    const matcher = compileDenyList([{ match: 'user:42', reason: 'abuse' }, { match: 'ip:2001:db8:7::/56' }], 56);
    expect(matcher.match('user:42', undefined, never)?.reason).toBe('abuse');
    expect(matcher.match('user:420', undefined, never)).toBeUndefined();
    expect(matcher.match('USER:42', undefined, never)).toBeUndefined();
    expect(matcher.match('user:1', ip('2001:db8:7:1::1'), never)?.match).toBe('ip:2001:db8:7::/56');
  });

  it('stops matching when until is reached, on the clock it is given', () => {
    const clock = { now: 1_000 };
    const matcher = compileDenyList(
      [
        { match: 'user:1', until: 2_000 },
        { match: '198.51.100.0/24', until: 1_500 },
      ],
      56,
    );
    const now = () => clock.now;
    expect(matcher.match('user:1', ip('198.51.100.3'), now)?.match).toBe('user:1');
    clock.now = 1_499;
    expect(matcher.match(undefined, ip('198.51.100.3'), now)?.match).toBe('198.51.100.0/24');
    clock.now = 1_500;
    expect(matcher.match(undefined, ip('198.51.100.3'), now)).toBeUndefined();
    expect(matcher.match('user:1', undefined, now)?.match).toBe('user:1');
    clock.now = 2_000;
    expect(matcher.match('user:1', undefined, now)).toBeUndefined();
  });

  it('lets a live entry for the same block win over an expired one, in either order', () => {
    const expired = { match: '198.51.100.0/24', until: 10, reason: 'old' };
    const forever = { match: '198.51.100.0/24', reason: 'new' };
    expect(reasonFor([expired, forever], '198.51.100.1', () => 100)).toBe('new');
    expect(reasonFor([forever, expired], '198.51.100.1', () => 100)).toBe('new');
  });

  it('leaves malformed entries out, lists each once, and keeps the rest', () => {
    const entries = [
      { match: '10.0.0.0/33' },
      { match: '1.2.3.256' },
      { match: '' },
      { match: 'user:7', until: Number.NaN },
      null,
      { match: 42 },
      { match: 'user:8', reason: 'x'.repeat(300) },
      { match: '10.0.0.0/8' },
    ] as unknown as DenyEntry[];
    const matcher = compileDenyList(entries, 56);
    expect(matcher.problems).toHaveLength(7);
    expect(matcher.problems[0]).toMatch(/^deny\[0\]: "10\.0\.0\.0\/33" looks like an IP address/);
    expect(matcher.size).toBe(2);
    expect(matcher.match(undefined, ip('10.9.9.9'), never)).toBeDefined();
    expect(matcher.match('user:7', undefined, never)).toBeUndefined();
    expect(matcher.match('user:8', undefined, never)?.reason).toHaveLength(200);
  });
});

describe('deny list matcher: 100,000 entries', () => {
  it('builds and matches each kind of entry, and nothing next to them', () => {
    const entries: DenyEntry[] = [];
    for (let i = 0; i < 40_000; i++) entries.push({ match: `10.${(i >> 8) & 255}.${i & 255}.${i % 7}` });
    for (let i = 0; i < 10_000; i++) entries.push({ match: `172.16.${i % 256}.0/24` });
    for (let i = 0; i < 30_000; i++) entries.push({ match: `2001:db8:${i.toString(16)}::/48` });
    for (let i = 0; i < 20_000; i++) entries.push({ match: `user:${i}`, reason: `user ${i}` });
    const started = Date.now();
    const matcher = compileDenyList(entries, 56);
    expect(matcher.size).toBe(100_000);
    expect(matcher.problems).toEqual([]);
    expect(Date.now() - started).toBeLessThan(60_000); // a sanity bound for a hung build, not a timing claim
    expect(matcher.match(undefined, ip('10.0.5.5'), never)?.match).toBe('10.0.5.5');
    expect(matcher.match(undefined, ip('10.0.5.4'), never)).toBeUndefined();
    expect(matcher.match(undefined, ip('10.156.63.1'), never)?.match).toBe('10.156.63.1'); // i = 39,999
    expect(matcher.match(undefined, ip('172.16.200.9'), never)).toBeDefined();
    expect(matcher.match(undefined, ip('172.17.0.1'), never)).toBeUndefined();
    expect(matcher.match(undefined, ip('2001:db8:752f:ab00::1'), never)?.match).toBe('2001:db8:752f::/48'); // i = 29,999
    expect(matcher.match(undefined, ip('2001:db8:7530::1'), never)).toBeUndefined(); // i = 30,000
    expect(matcher.match('user:19999', undefined, never)?.reason).toBe('user 19999');
    expect(matcher.match('user:20000', undefined, never)).toBeUndefined();
  });
});
