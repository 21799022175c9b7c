import { fixedWindow } from '@sluice/core';
import { denyChangesSince, liveDenyList, type DenyLineage, type DenyListChange, type LiveDenyLineage } from '@sluice/core/config';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { compileDenyList, type DenyEntry } from '../src/handler/deny/list.js';
import type { MutableDenyMatcher } from '../src/handler/deny/matcher.js';
import { parseIp, type IpAddress } from '../src/ip/address.js';
import { memoryLimiter } from './support.js';

/** The time every lookup is made at: entries carry `until`s on either side of it. */
const NOW = 1_700_000_000_000;
const now = (): number => NOW;

function ip(text: string): IpAddress {
  const address = parseIp(text);
  if (address === undefined) throw new Error(`not an address: ${text}`);
  return address;
}

/**
 * The matches the changes pick from. Several fall on one key of the matcher: the /32s written three ways, two /24s
 * written from different addresses, two /64s and a single address in one /56 (widened to it), the same /56 written
 * as such. The malformed ones look like addresses and parse as none.
 */
const MATCHES = [
  'user:1',
  'user:2',
  'ip:gateway',
  'ip:cafe',
  '203.0.113.7',
  'ip:203.0.113.7',
  '::ffff:203.0.113.7',
  '203.0.113.0/24',
  '203.0.113.5/24',
  '198.51.100.0/22',
  '0.0.0.0/0',
  '2001:db8:1:100::/64',
  '2001:db8:1:101::/64',
  '2001:db8:1:100::1',
  '2001:db8:1:100::/56',
  '2001:db8:1::/48',
  '2001:db8::/32',
  '203.0.113.999',
  '10.0.0.0/33',
  '2001:db8:::1',
];

/** Who asks: each address, anonymous (its `ip:` identity) and signed in; identities without an address. */
const ADDRESSES = [
  '203.0.113.7',
  '203.0.113.8',
  '198.51.100.9',
  '198.51.103.255',
  '10.1.1.1',
  '2001:db8:1:100::5',
  '2001:db8:1:1ff::1',
  '2001:db8:1:200::1',
  '2001:db8:2::1',
  '2001:db9::1',
];
const PROBES: ReadonlyArray<readonly [string | undefined, IpAddress | undefined]> = [
  ...ADDRESSES.map((a) => [`ip:${a}`, ip(a)] as const),
  ...ADDRESSES.map((a) => ['user:1', ip(a)] as const),
  ...['user:1', 'user:2', 'user:3', 'ip:gateway', 'ip:cafe'].map((identity) => [identity, undefined] as const),
  [undefined, undefined],
];

const entry = fc.record(
  {
    match: fc.constantFrom(...MATCHES),
    // Expired, expiring at the lookup (not live), live, and without end.
    until: fc.constantFrom(NOW - 1000, NOW, NOW + 1000, NOW + 5000),
    reason: fc.constantFrom('a', 'b'),
  },
  { requiredKeys: ['match'] },
);
const change = fc.record(
  {
    clear: fc.constantFrom(false, false, false, true),
    remove: fc.array(fc.constantFrom(...MATCHES), { maxLength: 4 }),
    add: fc.array(entry, { maxLength: 5 }),
  },
  { requiredKeys: [] },
);

/** The list with one entry per match, as configure accepts it. */
const list = fc.array(entry, { maxLength: 12 }).map((entries) => [...new Map(entries.map((e) => [e.match, e])).values()]);

/** Applies the changes the limiter's lineage journalled since version `from` to the matcher, in place. */
function follow(matcher: MutableDenyMatcher, lineage: DenyLineage, from: number): void {
  for (const step of denyChangesSince(lineage, from, lineage.head)!) matcher.apply(step);
}

/** Whether the changed matcher answers every probe as a compile of `entries` from scratch does. */
function expectSameAnswers(changed: MutableDenyMatcher, entries: readonly DenyEntry[], prefix: number): void {
  const fresh = compileDenyList(entries, prefix);
  for (const [identity, address] of PROBES) {
    expect(changed.match(identity, address, now), `${identity} ${address === undefined ? '' : address.bytes.join('.')}`).toBe(
      fresh.match(identity, address, now),
    );
  }
  expect([changed.size, changed.hasRanges, changed.problems.length, changed.entries]).toEqual([
    fresh.size,
    fresh.hasRanges,
    fresh.problems.length,
    entries.length,
  ]);
}

describe('deny list matcher changed in place', () => {
  it('answers as a compile of the changed list, for any sequence of adds, removes and clears', () => {
    // One limiter for every run (its store is never called): each run sets its own starting list.
    const limiter = memoryLimiter({ name: 'api', rules: fixedWindow({ limit: 10, window: '1s' }) });
    fc.assert(
      fc.property(list, fc.array(change, { maxLength: 10 }), fc.constantFrom(56, 64), (start, changes, prefix) => {
        limiter.configure({ deny: liveDenyList(start) });
        const matcher = compileDenyList(limiter.deny, prefix);
        const lineage = limiter.denyLineage!;
        for (const c of changes) {
          const before = lineage.head;
          (limiter.denyLineage as LiveDenyLineage).change(c as DenyListChange);
          expect(limiter.denyLineage).toBe(lineage);
          follow(matcher, lineage, before);
          expectSameAnswers(matcher, limiter.deny, prefix);
        }
      }),
      { numRuns: 400 },
    );
  });

  it('grows and shrinks groups of thousands of networks, rebuilding their filters, and answers as a compile throughout', () => {
    const address = (n: number) => `10.${(n >> 16) & 255}.${(n >> 8) & 255}.${n & 255}`;
    const v6 = (n: number) => `2001:db8:${(n >> 8).toString(16)}:${(n & 255).toString(16)}00::/56`;
    const matcher = compileDenyList([{ match: '192.0.2.0/24' }], 56);
    const held = new Map<string, DenyEntry>([['192.0.2.0/24', { match: '192.0.2.0/24' }]]);
    const probes = (count: number) =>
      Array.from({ length: count }, (_, n) => [ip(address(n)), ip(v6(n).replace('/56', '1'))] as const).flat();
    const check = (count: number) => {
      const fresh = compileDenyList([...held.values()], 56);
      for (const probe of probes(count)) expect(matcher.match(undefined, probe, now)).toBe(fresh.match(undefined, probe, now));
      expect([matcher.size, matcher.hasRanges]).toEqual([fresh.size, fresh.hasRanges]);
    };
    // Grows from one network to 3,000 per group (the filters were sized for one), then back down to a few.
    for (let n = 0; n < 3000; n++) {
      const added = [{ match: address(n) }, { match: v6(n), until: NOW + n }];
      matcher.apply({ version: n + 1, clear: false, remove: [], add: added });
      for (const e of added) held.set(e.match, e);
    }
    check(3100);
    for (let n = 0; n < 3000; n++) {
      if (n % 500 === 0) continue;
      matcher.apply({ version: 3001 + n, clear: false, remove: [address(n), v6(n)], add: [] });
      held.delete(address(n));
      held.delete(v6(n));
    }
    check(3100);
    matcher.apply({ version: 7000, clear: false, remove: ['192.0.2.0/24', ...[0, 500, 1000, 1500, 2000, 2500].map(address)], add: [] });
    for (const match of ['192.0.2.0/24', ...[0, 500, 1000, 1500, 2000, 2500].map(address)]) held.delete(match);
    check(3100);
    expect(matcher.hasRanges).toBe(true); // the IPv6 /56s are left
  });

  it('names a malformed entry a change adds by its match, and forgets it when it is removed', () => {
    const matcher = compileDenyList([{ match: '10.0.0.0/33' }, { match: 'user:1' }], 56);
    expect(matcher.problems).toEqual([expect.stringMatching(/^deny\[0\]: "10\.0\.0\.0\/33" looks like an IP address/)]);
    matcher.apply({ version: 1, clear: false, remove: [], add: [{ match: '203.0.113.999' }, { match: '203.0.113.1' }] });
    expect(matcher.problemsSince(0)).toEqual([
      'change.add "203.0.113.999": looks like an IP address but is neither an address nor a CIDR block',
    ]);
    expect(matcher.problems).toHaveLength(2);
    matcher.apply({ version: 2, clear: false, remove: ['10.0.0.0/33', '203.0.113.999'], add: [] });
    expect([matcher.problems, matcher.entries, matcher.size]).toEqual([[], 2, 2]);
  });
});
