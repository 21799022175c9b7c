import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { clientIpResolver, type ClientIpOptions } from '../src/index.js';
import { parseForwarded } from '../src/ip/index.js';

function resolve(options: ClientIpOptions, remoteAddress: string | undefined, headers: Record<string, string> = {}) {
  return clientIpResolver(options)({ headers, remoteAddress });
}

function keyOf(options: ClientIpOptions, remoteAddress: string | undefined, headers: Record<string, string> = {}) {
  const result = resolve(options, remoteAddress, headers);
  return result.ok ? result.key : `problem: ${result.problem}`;
}

describe('parseForwarded (RFC 7239)', () => {
  it('reads the examples of the RFC', () => {
    expect(parseForwarded('for="_gazonk"')).toEqual([null]);
    expect(parseForwarded('For="[2001:db8:cafe::17]:4711"')).toEqual(['[2001:db8:cafe::17]:4711']);
    expect(parseForwarded('for=192.0.2.60;proto=http;by=203.0.113.43')).toEqual(['192.0.2.60']);
    expect(parseForwarded('for=192.0.2.43, for=198.51.100.17')).toEqual(['192.0.2.43', '198.51.100.17']);
    expect(parseForwarded('for=unknown, for=198.51.100.17;by=x')).toEqual([null, '198.51.100.17']);
    expect(parseForwarded('proto=https, for=1.2.3.4')).toEqual([null, '1.2.3.4']);
  });

  it('marks a broken element as malformed, on its own', () => {
    for (const text of ['for="1.2.3.4', 'for=1.2.3.4;for=5.6.7.8', 'for', 'for=[::1]', 'for=1.2.3.4 junk', '=1.2.3.4', 'for ="1.2.3.4"']) {
      expect(parseForwarded(text), text).toEqual([{ malformed: text }]);
      expect(parseForwarded(`${text}, for=198.51.100.17`), text).toEqual([{ malformed: text }, '198.51.100.17']);
    }
  });

  it('delimits elements from the right, past quoted commas and escaped quotes', () => {
    expect(parseForwarded('for="a,b";by=x, for=1.2.3.4')).toEqual(['a,b', '1.2.3.4']);
    expect(parseForwarded('for="\\\\", for=1.2.3.4')).toEqual(['\\', '1.2.3.4']);
    expect(parseForwarded('for=1.1.1.1, , ;, for=2.2.2.2')).toEqual(['1.1.1.1', '2.2.2.2']);
    // An unterminated quote swallows everything left of it into one broken element; the right stays readable.
    expect(parseForwarded('for=9.9.9.9, for="x, for=1.2.3.4')).toEqual([{ malformed: 'for=9.9.9.9, for="x' }, '1.2.3.4']);
  });

  it('handles escapes inside quoted strings', () => {
    expect(parseForwarded('for="\\"x\\""')).toEqual(['"x"']);
  });
});

describe('client IP', () => {
  it('uses the socket address by default and ignores every forwarding header', () => {
    const headers = { 'x-forwarded-for': '1.1.1.1', forwarded: 'for=2.2.2.2', 'x-real-ip': '3.3.3.3', 'cf-connecting-ip': '4.4.4.4' };
    expect(resolve({}, '203.0.113.7', headers)).toMatchObject({ ok: true, key: '203.0.113.7', source: 'socket' });
  });

  it('reads an IPv4-mapped socket address as IPv4', () => {
    expect(keyOf({}, '::ffff:203.0.113.7')).toBe('203.0.113.7');
  });

  it('groups IPv6 clients by /56 unless told otherwise', () => {
    expect(keyOf({}, '2001:db8:1:2ff:aaaa::1')).toBe('2001:db8:1:200::/56');
    expect(keyOf({ ipv6Prefix: 48 }, '2001:db8:1:2ff:aaaa::1')).toBe('2001:db8:1::/48');
    expect(keyOf({ ipv6Prefix: 64 }, '2001:db8:1:2ff:aaaa::1')).toBe('2001:db8:1:2ff::/64');
  });

  it('strips the zone id of a link-local socket address', () => {
    expect(keyOf({ ipv6Prefix: 64 }, 'fe80::1%eth0')).toBe('fe80::/64');
  });

  it('takes the rightmost untrusted X-Forwarded-For entry behind trusted CIDR blocks', () => {
    const options: ClientIpOptions = { trustProxy: ['10.0.0.0/8'] };
    expect(keyOf(options, '10.0.0.1', { 'x-forwarded-for': '6.6.6.6, 203.0.113.7, 10.0.0.2' })).toBe('203.0.113.7');
    // Not from a trusted proxy: the header is the client's own words and is ignored.
    expect(keyOf(options, '198.51.100.1', { 'x-forwarded-for': '203.0.113.7' })).toBe('198.51.100.1');
    // Every hop trusted: the furthest one is the client.
    expect(keyOf(options, '10.0.0.1', { 'x-forwarded-for': '10.1.1.1, 10.0.0.2' })).toBe('10.1.1.1');
    // No header from a trusted proxy: the proxy is what we know.
    expect(keyOf(options, '10.0.0.1')).toBe('10.0.0.1');
  });

  it('counts hops with a number: 1 = the socket is the one proxy', () => {
    expect(keyOf({ trustProxy: 1 }, '10.0.0.1', { 'x-forwarded-for': '6.6.6.6, 203.0.113.7' })).toBe('203.0.113.7');
    expect(keyOf({ trustProxy: 2 }, '10.0.0.1', { 'x-forwarded-for': '6.6.6.6, 203.0.113.7, 10.0.0.9' })).toBe('203.0.113.7');
    expect(keyOf({ trustProxy: 1 }, '10.0.0.1')).toBe('10.0.0.1');
  });

  it('strips ports and unwraps IPv4-mapped entries in the chain; repeated headers arrive joined', () => {
    expect(keyOf({ trustProxy: 1 }, '::1', { 'x-forwarded-for': '[2001:db8::7]:5555' })).toBe('2001:db8::/56');
    expect(keyOf({ trustProxy: 1 }, '::1', { 'x-forwarded-for': '203.0.113.7:5555' })).toBe('203.0.113.7');
    expect(keyOf({ trustProxy: 1 }, '::1', { 'x-forwarded-for': '::ffff:203.0.113.7' })).toBe('203.0.113.7');
    expect(keyOf({ trustProxy: 'loopback' }, '127.0.0.1', { 'x-forwarded-for': '6.6.6.6, 203.0.113.7' })).toBe('203.0.113.7');
  });

  it('reads RFC 7239 Forwarded when told to, and only then', () => {
    const headers = { forwarded: 'for=6.6.6.6, for="[2001:db8:cafe::17]:4711"', 'x-forwarded-for': '9.9.9.9' };
    expect(keyOf({ trustProxy: 1, header: 'forwarded' }, '10.0.0.1', headers)).toBe('2001:db8:cafe::/56');
    expect(keyOf({ trustProxy: 1 }, '10.0.0.1', headers)).toBe('9.9.9.9');
  });

  describe('a malformed Forwarded element prepended by the client changes nothing', () => {
    const MALFORMED = ['for=x y', 'for="6.6.6.6', 'for=6.6.6.6;for=7.7.7.7', 'for=[2001:db8::6]', 'for='];
    const proxy = { trustProxy: ['10.0.0.1'], header: 'forwarded' } as const;

    for (const garbage of MALFORMED) {
      it(`left of the read entries: ${garbage}`, () => {
        // The proxy (the socket, 10.0.0.1) appended the client it saw; the client's own element is never read.
        expect(keyOf(proxy, '10.0.0.1', { forwarded: `${garbage}, for=203.0.113.7` })).toBe('203.0.113.7');
        expect(keyOf(proxy, '10.0.0.1', { forwarded: `${garbage},for="203.0.113.7:5555";proto=https` })).toBe('203.0.113.7');
        // Two trusted hops (10.0.0.2 then the socket 10.0.0.1): still only the elements right of the garbage are read.
        expect(
          keyOf({ trustProxy: ['10.0.0.0/8'], header: 'forwarded' }, '10.0.0.1', {
            forwarded: `${garbage}, for=203.0.113.7, for=10.0.0.2`,
          }),
        ).toBe('203.0.113.7');
        expect(keyOf({ trustProxy: 2, header: 'forwarded' }, '10.0.0.1', { forwarded: `${garbage}, for=203.0.113.7, for=10.0.0.2` })).toBe(
          '203.0.113.7',
        );
      });

      it(`in the read position it is still rejected: ${garbage}`, () => {
        expect(keyOf(proxy, '10.0.0.1', { forwarded: garbage })).toMatch(
          /^problem: the Forwarded header's element .* \(hop 1\) is malformed$/,
        );
        // Every hop right of it trusted: the walk reaches it and gives no identity rather than a guess.
        expect(keyOf({ trustProxy: ['10.0.0.0/8'], header: 'forwarded' }, '10.0.0.1', { forwarded: `${garbage}, for=10.0.0.2` })).toMatch(
          /^problem: the Forwarded header's element .* \(hop 2\) is malformed$/,
        );
      });
    }
  });

  it('refuses to guess when the entry it needs is malformed or hidden', () => {
    expect(keyOf({ trustProxy: 1 }, '10.0.0.1', { 'x-forwarded-for': '1.2.3.4, not-an-ip' })).toMatch(/^problem: hop 1 .*not-an-ip/);
    expect(keyOf({ trustProxy: 1, header: 'forwarded' }, '10.0.0.1', { forwarded: 'for=unknown' })).toMatch(/^problem: hop 1/);
    expect(keyOf({ trustProxy: 1, header: 'forwarded' }, '10.0.0.1', { forwarded: 'for="1.2.3.4' })).toMatch(
      /^problem: the Forwarded header/,
    );
    expect(keyOf({ trustProxy: 1 }, '10.0.0.1', { 'x-forwarded-for': 'fe80::1%eth0' })).toMatch(/^problem/);
    expect(keyOf({}, 'not-an-ip')).toMatch(/^problem: the socket address/);
    expect(keyOf({}, undefined)).toMatch(/^problem: the runtime exposes no client address/);
  });

  it('but garbage left of the entry it needs is never read', () => {
    expect(keyOf({ trustProxy: 1 }, '10.0.0.1', { 'x-forwarded-for': 'garbage, 203.0.113.7' })).toBe('203.0.113.7');
  });

  describe('platform presets', () => {
    it('vercel: x-vercel-forwarded-for, then x-real-ip', () => {
      expect(resolve({ platform: 'vercel' }, undefined, { 'x-vercel-forwarded-for': '203.0.113.7', 'x-real-ip': '1.1.1.1' })).toMatchObject(
        { key: '203.0.113.7', source: 'vercel' },
      );
      expect(keyOf({ platform: 'vercel' }, undefined, { 'x-real-ip': '203.0.113.8' })).toBe('203.0.113.8');
    });

    it('cloudflare: cf-connecting-ip; honoured only from Cloudflare when its ranges are given', () => {
      const options: ClientIpOptions = { platform: 'cloudflare', trustProxy: ['173.245.48.0/20'] };
      expect(keyOf(options, '173.245.48.1', { 'cf-connecting-ip': '2001:db8:1:2::3' })).toBe('2001:db8:1::/56');
      expect(keyOf(options, '198.51.100.1', { 'cf-connecting-ip': '203.0.113.7' })).toBe('198.51.100.1');
    });

    it('fly: fly-client-ip', () => {
      expect(keyOf({ platform: 'fly' }, '172.16.0.2', { 'fly-client-ip': '203.0.113.9' })).toBe('203.0.113.9');
    });

    it('a platform header that is not exactly one address is rejected, and its absence falls back to the socket', () => {
      expect(keyOf({ platform: 'fly' }, '172.16.0.2', { 'fly-client-ip': '1.1.1.1, 2.2.2.2' })).toMatch(
        /^problem: the fly-client-ip header/,
      );
      expect(keyOf({ platform: 'fly' }, '172.16.0.2')).toBe('172.16.0.2');
    });
  });

  it('validates its options with messages naming the field', () => {
    expect(() => clientIpResolver({ ipv6Prefix: 40 })).toThrow(/ipv6Prefix must be an integer from 48 to 64, got 40/);
    expect(() => clientIpResolver({ trustProxy: ['10.0.0.0/33'] })).toThrow(/trustProxy: "10.0.0.0\/33" is not an address or CIDR block/);
    expect(() => clientIpResolver({ trustProxy: 0 })).toThrow(/hop count must be an integer from 1 to 32/);
    expect(() => clientIpResolver({ trustProxy: [] })).toThrow(/empty list/);
    expect(() => clientIpResolver({ header: 'x-real-ip' as 'forwarded' })).toThrow(/header must be/);
    expect(() => clientIpResolver({ platform: 'heroku' as 'fly' })).toThrow(/platform must be one of vercel, cloudflare, fly/);
    expect(() => clientIpResolver({ trustproxy: 1 } as ClientIpOptions)).toThrow(/unknown option "trustproxy"/);
    expect(() => clientIpResolver({ trustProxy: ['10.0.0.0/8'] })({ headers: {} })).not.toThrow();
  });

  it('CIDR trust without a socket address cannot be checked and says so', () => {
    expect(keyOf({ trustProxy: ['10.0.0.0/8'] }, undefined, { 'x-forwarded-for': '203.0.113.7' })).toMatch(
      /exposes no socket address to check/,
    );
    // Hop counting works without one: the platform's proxy is the implied hop 0.
    expect(keyOf({ trustProxy: 1 }, undefined, { 'x-forwarded-for': '6.6.6.6, 203.0.113.7' })).toBe('203.0.113.7');
  });
});

describe('attack: rotating the header a client controls', () => {
  const ipv4 = fc.tuple(fc.nat(255), fc.nat(255), fc.nat(255), fc.nat(255)).map((p) => p.join('.'));
  const junk = fc.oneof(ipv4, fc.string({ maxLength: 20 }), fc.constant('::1'), fc.constant('unknown'));
  const spoofed = fc.array(junk, { maxLength: 6 }).map((parts) => parts.join(', '));

  it('under the default config no X-Forwarded-For value moves the client', () => {
    fc.assert(
      fc.property(spoofed, (header) => {
        expect(keyOf({}, '203.0.113.7', { 'x-forwarded-for': header, forwarded: `for=${header}` })).toBe('203.0.113.7');
      }),
      { numRuns: 200 },
    );
  });

  it('behind one declared proxy, whatever the client prepends, the entry the proxy appended decides', () => {
    fc.assert(
      fc.property(spoofed, (header) => {
        const chain = header === '' ? '203.0.113.7' : `${header}, 203.0.113.7`;
        expect(keyOf({ trustProxy: ['10.0.0.1'] }, '10.0.0.1', { 'x-forwarded-for': chain })).toBe('203.0.113.7');
        expect(keyOf({ trustProxy: 1 }, '10.0.0.1', { 'x-forwarded-for': chain })).toBe('203.0.113.7');
      }),
      { numRuns: 200 },
    );
  });

  it("behind one declared proxy, whatever Forwarded text the client prepends, the proxy's element decides", () => {
    fc.assert(
      fc.property(fc.string({ maxLength: 40 }), spoofed, (text, header) => {
        const forwarded = `${text}${header}, for=203.0.113.7`;
        expect(keyOf({ trustProxy: ['10.0.0.1'], header: 'forwarded' }, '10.0.0.1', { forwarded })).toBe('203.0.113.7');
        expect(keyOf({ trustProxy: 1, header: 'forwarded' }, '10.0.0.1', { forwarded })).toBe('203.0.113.7');
      }),
      { numRuns: 300 },
    );
  });

  it('every address of one /64 (and of its /56) lands in one bucket, a neighbouring /56 in another', () => {
    const group = fc.integer({ min: 0, max: 0xffff }).map((g) => g.toString(16));
    fc.assert(
      fc.property(fc.tuple(group, group, group, group), ([a, b, c, d]) => {
        expect(keyOf({}, `2001:db8:1:2:${a}:${b}:${c}:${d}`)).toBe('2001:db8:1::/56');
        expect(keyOf({}, `2001:db8:1:1ff:${a}:${b}:${c}:${d}`)).toBe('2001:db8:1:100::/56');
      }),
      { numRuns: 200 },
    );
  });
});
