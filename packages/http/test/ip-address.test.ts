import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { formatIp, maskIp, parseAddressText, parseIp, parseIpv4, parseIpv6 } from '../src/ip/index.js';

const hex = (bytes: Uint8Array | undefined) =>
  bytes === undefined ? undefined : Array.from(bytes, (b) => b.toString(16).padStart(2, '0')).join('');

describe('parseIpv6: every RFC 4291 text form', () => {
  it.each([
    ['2001:db8:0:0:8:800:200c:417a', '20010db80000000000080800200c417a'],
    ['2001:DB8::8:800:200C:417A', '20010db80000000000080800200c417a'],
    ['ff01::101', 'ff010000000000000000000000000101'],
    ['::1', '00000000000000000000000000000001'],
    ['::', '00000000000000000000000000000000'],
    ['1::', '00010000000000000000000000000000'],
    ['1:2:3:4:5:6:7::', '00010002000300040005000600070000'],
    ['::2:3:4:5:6:7:8', '00000002000300040005000600070008'],
    ['0:0:0:0:0:0:13.1.68.3', '0000000000000000000000000d014403'],
    ['::13.1.68.3', '0000000000000000000000000d014403'],
    ['::ffff:129.144.52.38', '00000000000000000000ffff81903426'],
    ['1:2:3:4:5:6:1.2.3.4', '00010002000300040005000601020304'],
    ['0001:0002:0003:0004:0005:0006:0007:0008', '00010002000300040005000600070008'],
  ])('%s', (text, bytes) => {
    expect(hex(parseIpv6(text))).toBe(bytes);
  });

  it.each([
    '',
    ':',
    ':::',
    '1:::2',
    '1::2::3',
    ':1:2:3:4:5:6:7',
    '1:2:3:4:5:6:7:',
    '1:2:3:4:5:6:7:8:9',
    '1:2:3:4:5:6:7',
    '1:2:3:4:5:6:7:8::',
    '::1:2:3:4:5:6:7:8',
    '12345::',
    'g::1',
    '1::1.2.3',
    '1::1.2.3.4.5',
    '1::256.1.1.1',
    '1::01.2.3.4',
    '1.2.3.4::',
    '1:2:3:4:5:6:7:1.2.3.4',
    '::1.2.3.4:5',
    'fe80::1%eth0',
    '[::1]',
    ' ::1',
    '::1 ',
    '1:2:3:4:5:6:7:8:1.2.3.4',
    '::ffff:1.2.3.4.',
    '0x1::',
    '-1::',
    '1::+1',
  ])('rejects %j', (text) => {
    expect(parseIpv6(text)).toBeUndefined();
  });

  it('agrees with the WHATWG URL parser on random addresses written in every form', () => {
    const groups = fc.array(fc.integer({ min: 0, max: 0xffff }), { minLength: 8, maxLength: 8 });
    fc.assert(
      fc.property(groups, fc.integer({ min: 0, max: 3 }), fc.boolean(), (g, form, upper) => {
        let text = g.map((x) => x.toString(16)).join(':');
        if (form === 1) text = g.map((x) => x.toString(16).padStart(4, '0')).join(':');
        if (form === 2) text = formatIp({ version: 6, bytes: bytesOf(g) });
        if (form === 3)
          text = `${g
            .slice(0, 6)
            .map((x) => x.toString(16))
            .join(':')}:${g[6]! >> 8}.${g[6]! & 255}.${g[7]! >> 8}.${g[7]! & 255}`;
        if (upper) text = text.toUpperCase();
        const ours = parseIpv6(text);
        expect(hex(ours)).toBe(hex(bytesOf(g)));
        // The URL parser is an independent RFC 4291 implementation present in every runtime, edge included.
        const viaUrl = new URL(`http://[${text}]/`).hostname.slice(1, -1);
        expect(formatIp({ version: 6, bytes: ours! })).toBe(viaUrl);
      }),
      { numRuns: 300 },
    );
  });

  it('formats per RFC 5952: lowercase, longest zero run compressed, first on a tie, single zero kept', () => {
    const f = (text: string) => formatIp({ version: 6, bytes: parseIpv6(text)! });
    expect(f('2001:0DB8:0000:0000:0000:0000:0000:0001')).toBe('2001:db8::1');
    expect(f('2001:db8:0:0:1:0:0:1')).toBe('2001:db8::1:0:0:1');
    expect(f('2001:db8:0:1:1:1:1:1')).toBe('2001:db8:0:1:1:1:1:1');
    expect(f('2001:0:0:1:0:0:0:1')).toBe('2001:0:0:1::1');
    expect(f('0:0:0:0:0:0:0:0')).toBe('::');
  });
});

describe('parseIp', () => {
  it('reads IPv4-mapped IPv6 as the IPv4 address, in dotted and hex form', () => {
    expect(parseIp('::ffff:203.0.113.7')).toEqual({ version: 4, bytes: new Uint8Array([203, 0, 113, 7]) });
    expect(parseIp('::FFFF:cb00:7107')).toEqual({ version: 4, bytes: new Uint8Array([203, 0, 113, 7]) });
    expect(parseIp('0:0:0:0:0:ffff:127.0.0.1')).toEqual({ version: 4, bytes: new Uint8Array([127, 0, 0, 1]) });
  });

  it('reads the NAT64 well-known prefix as the IPv4 address behind it', () => {
    expect(formatIp(parseIp('64:ff9b::192.0.2.33')!)).toBe('192.0.2.33');
  });

  it('keeps IPv4-compatible (deprecated) and other IPv6 addresses as IPv6', () => {
    expect(parseIp('::1.2.3.4')?.version).toBe(6);
    expect(parseIp('::1')?.version).toBe(6);
  });

  it.each(['1.2.3.4', '0.0.0.0', '255.255.255.255', '10.0.0.1'])('accepts IPv4 %s', (text) => {
    expect(formatIp(parseIp(text)!)).toBe(text);
  });

  it.each([
    '1.2.3',
    '1.2.3.4.5',
    '256.1.1.1',
    '01.2.3.4',
    '1.2.3.04',
    '1..2.3',
    '1.2.3.',
    '.1.2.3',
    '127.1',
    '1.2.3.4a',
    '١.٢.٣.٤',
    '0x7f.0.0.1',
    ' 1.2.3.4',
  ])('rejects IPv4 %j', (text) => {
    expect(parseIpv4(text)).toBeUndefined();
    expect(parseIp(text)).toBeUndefined();
  });
});

describe('parseAddressText', () => {
  const hop = { allowPort: true, stripZone: false };
  const socket = { allowPort: false, stripZone: true };
  it('strips ports from IPv4 and bracketed IPv6', () => {
    expect(formatIp(parseAddressText('203.0.113.7:8080', hop)!)).toBe('203.0.113.7');
    expect(formatIp(parseAddressText('[2001:db8::1]:443', hop)!)).toBe('2001:db8::1');
    expect(formatIp(parseAddressText('[2001:db8::1]', hop)!)).toBe('2001:db8::1');
    expect(formatIp(parseAddressText('  2001:db8::1 ', hop)!)).toBe('2001:db8::1');
  });

  it('rejects bad ports, unbalanced brackets and bracketed IPv4', () => {
    for (const text of [
      '1.2.3.4:',
      '1.2.3.4:65536',
      '1.2.3.4:x',
      '[2001:db8::1',
      '[2001:db8::1]x',
      '[1.2.3.4]',
      '[::1]:',
      '2001:db8::1:99999',
    ]) {
      expect(parseAddressText(text, hop), text).toBeUndefined();
    }
  });

  it('strips a zone id from a socket address only; a header carrying one is rejected', () => {
    expect(formatIp(parseAddressText('fe80::1%eth0', socket)!)).toBe('fe80::1');
    expect(parseAddressText('fe80::1%eth0', hop)).toBeUndefined();
    expect(parseAddressText('fe80::1%', socket)).toBeUndefined();
    expect(parseAddressText('1.2.3.4%eth0', socket)).toBeUndefined();
  });

  it('does not take a port on a socket address (the runtime reports it separately)', () => {
    expect(parseAddressText('1.2.3.4:80', socket)).toBeUndefined();
  });
});

describe('maskIp', () => {
  it('keeps the first N bits', () => {
    const address = parseIp('2001:db8:abcd:12ff:ffff:ffff:ffff:ffff')!;
    expect(formatIp(maskIp(address, 56))).toBe('2001:db8:abcd:1200::');
    expect(formatIp(maskIp(address, 48))).toBe('2001:db8:abcd::');
    expect(formatIp(maskIp(address, 64))).toBe('2001:db8:abcd:12ff::');
    expect(formatIp(maskIp(address, 60))).toBe('2001:db8:abcd:12f0::');
  });
});

function bytesOf(groups: readonly number[]): Uint8Array {
  const bytes = new Uint8Array(16);
  groups.forEach((g, i) => {
    bytes[i * 2] = g >> 8;
    bytes[i * 2 + 1] = g & 0xff;
  });
  return bytes;
}
