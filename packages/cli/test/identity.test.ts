import { describe, expect, it } from 'vitest';
import { iso, LOG_START, tuneText } from './helpers.js';

const identitiesOf = async (lines: Array<Record<string, unknown>>) => {
  const report = await tuneText(lines.map((l) => JSON.stringify({ time: iso(LOG_START), ...l })).join('\n'));
  return report.busiest.map((b) => `${b.identity} ${b.peak}`).sort();
};

describe('identity, as @sluice/http resolves it', () => {
  it('is the user id when there is one, whatever the IP', async () => {
    expect(
      await identitiesOf([
        { user_id: 'u1', ip: '203.0.113.1' },
        { user_id: 'u1', ip: '203.0.113.2' },
      ]),
    ).toEqual(['user:u1 2']);
  });

  it('falls back to the IP for a null, empty or missing user id', async () => {
    expect(await identitiesOf([{ user_id: null, ip: '203.0.113.1' }, { user_id: '', ip: '203.0.113.1' }, { ip: '203.0.113.1' }])).toEqual([
      'ip:203.0.113.1 3',
    ]);
  });

  it('groups IPv6 clients by their /56 (the HTTP layer default) and reads IPv4-mapped addresses as IPv4', async () => {
    const ids = await identitiesOf([
      { ip: '2001:db8:aaaa:bb01::1' },
      { ip: '2001:db8:aaaa:bbff:1234:5678:9abc:def0' }, // same /56
      { ip: '2001:db8:aaaa:bc00::1' }, // next /56
      { ip: '::ffff:198.51.100.4' },
      { ip: '198.51.100.4' },
      { ip: '[2001:db8:aaaa:bb02::9]:443' }, // brackets and port, as some servers log
    ]);
    expect(ids).toEqual(['ip:198.51.100.4 2', 'ip:2001:db8:aaaa:bb00::/56 3', 'ip:2001:db8:aaaa:bc00::/56 1']);
  });

  it('takes the IPv6 prefix length from ipv6Prefix', async () => {
    const report = await tuneText(
      [{ ip: '2001:db8:aaaa:bb01::1' }, { ip: '2001:db8:aaaa:bc00::1' }]
        .map((l) => JSON.stringify({ time: iso(LOG_START), ...l }))
        .join('\n'),
      { ipv6Prefix: 48 },
    );
    expect(report.busiest).toEqual([{ identity: 'ip:2001:db8:aaaa::/48', peak: 2 }]);
  });
});
