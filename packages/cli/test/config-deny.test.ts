/**
 * `sluice config deny`, the built binary run as a process, against a real redis-server, a SQLite file and the
 * Upstash REST fixture on a real Redis, each keeping the list in its deny structure: add (an identity, IPv4 and IPv6
 * blocks, a temporary block; each one change, its version printed), list (table and JSON), remove, the exit codes (0 done, 1 the store failed, 2 the input is wrong, 3 nothing to remove), and that a
 * match or a duration that is not accepted is refused before anything is stored. What `add` accepts is
 * deny-input.ts's, tested here by a table; entries already stored that are not valid: deny-stored-entries.test.ts.
 */
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, test } from 'vitest';
import { denyTable } from '../src/commands/config-deny-list.js';
import { checkMatch, denyKind } from '../src/commands/deny-input.js';
import { byMatch, ndjson, sluice, storedDeny, storedDenyVersion, useStores } from './run-cli.js';

const stores = useStores('sluice-cli-deny-');

describe('how a match is read (as @sluice/http reads it)', () => {
  test.each([
    ['user:42', 'ident'],
    ['sk_live_abc123', 'ident'],
    ['cafe', 'ident'],
    ['203.0.113.7', 'IPv4'],
    ['203.0.113.0/24', 'IPv4'],
    ['ip:198.51.100.0/24', 'IPv4'],
    ['::ffff:203.0.113.0/120', 'IPv4'],
    ['2001:db8::/56', 'IPv6'],
    ['2001:db8::1', 'IPv6'],
    ['203.0.113.0/33', 'invalid'],
    ['2001:db8::/129', 'invalid'],
    ['1.2.3', 'invalid'],
    ['1.2.3/24', 'invalid'],
    ['203.0.113.0/024', 'invalid'],
  ])('%s is %s', (match, kind) => {
    expect(denyKind(match)).toBe(kind);
  });

  test.each([
    // addresses and blocks, also after ip:
    ['203.0.113.7', {}, 'IPv4'],
    ['203.0.113.0/24', {}, 'IPv4'],
    ['ip:198.51.100.0/24', {}, 'IPv4'],
    ['::ffff:203.0.113.0/120', {}, 'IPv4'],
    ['2001:db8::/56', {}, 'IPv6'],
    ['2001:db8::1', {}, 'IPv6'],
    ['0.0.0.0/0', {}, 'IPv4'],
    // identities that say they are: a prefix, or --identity
    ['user:42', {}, 'ident'],
    ['key:abc', {}, 'ident'],
    ['tenant.eu-1:acme', {}, 'ident'],
    ['sk_live_abc123', { identity: true }, 'ident'],
    ['cafe', { identity: true }, 'ident'],
    ['10.0.0.1O', {}, 'refused: is written like an IP address or CIDR block but is not one'],
  ])('add accepts %j %j as %s', (match, options, kind) => {
    if (kind.startsWith('refused: ')) {
      expect(() => checkMatch(match, options)).toThrow(kind.slice('refused: '.length));
      return;
    }
    expect(checkMatch(match, options)).toBe(kind);
  });

  test.each([
    // a slash that is not a block, or a block with a bad prefix
    ['1.2.3.4/-1', {}, 'is written like an IP address or CIDR block but is not one'],
    ['not-an-ip/24', {}, 'is written like an IP address or CIDR block but is not one'],
    ['not-an-ip/24', { identity: true }, 'is written like an IP address or CIDR block but is not one'],
    ['user:1/2', {}, 'is written like an IP address or CIDR block but is not one'],
    ['203.0.113.0/33', {}, 'is written like an IP address or CIDR block but is not one'],
    ['2001:db8::/129', {}, 'is written like an IP address or CIDR block but is not one'],
    ['203.0.113.0/024', {}, 'is written like an IP address or CIDR block but is not one'],
    // written like an address, not one
    ['1.2.3', {}, 'is written like an IP address or CIDR block but is not one'],
    ['1.2.3.256', {}, 'is written like an IP address or CIDR block but is not one'],
    ['1.2.3.4:8080', {}, 'is written like an IP address or CIDR block but is not one'],
    ['[2001:db8::1]', {}, 'is written like an IP address or CIDR block but is not one'],
    ['cafe:babe', { identity: true }, 'is written like an IP address or CIDR block but is not one'],
    ['ip:user', {}, 'is written like an IP address or CIDR block but is not one'],
    ['2001:db8::1%eth0', {}, 'has a zone index (%...), which is not part of a client address'],
    ['fe80::1%25eth0', { identity: true }, 'has a zone index'],
    // host bits past the prefix: refused, naming the block
    ['10.9.8.7/24', {}, 'has bits set past its /24 prefix, so it would match the whole block 10.9.8.0/24'],
    ['ip:10.9.8.7/24', {}, 'would match the whole block ip:10.9.8.0/24'],
    ['2001:db8::1/56', {}, 'has bits set past its /56 prefix, so it would match the whole block 2001:db8::/56'],
    // empty or spaces around
    [' ', {}, 'is empty or has spaces around it'],
    ['', { identity: true }, 'is empty or has spaces around it'],
    [' user:42', {}, 'is empty or has spaces around it'],
    ['user:42\t', { identity: true }, 'is empty or has spaces around it'],
    // an identity without a prefix, unless said so
    ['sk_live_abc123', {}, 'is neither an address or block nor an identity with a prefix'],
    ['cafe', {}, 'is neither an address or block nor an identity with a prefix'],
    ['user:', {}, 'is neither an address or block nor an identity with a prefix'],
    ['42', {}, 'is neither an address or block nor an identity with a prefix'],
    // an address said to be an identity: the HTTP layer would match it as an address
    ['203.0.113.7', { identity: true }, 'is an IP address or block, which the HTTP layer matches as one: leave out --identity'],
  ])('add refuses %j %j: it %s, naming the accepted forms', (match, options, why) => {
    let message = '';
    try {
      checkMatch(match, options);
    } catch (error) {
      message = (error as Error).message;
    }
    expect(message).toContain(`<match> ${JSON.stringify(match)} `);
    expect(message).toContain(why);
    expect(message).toMatch(
      /; give an address \(203\.0\.113\.7, 2001:db8::1\), a block .*, an identity with a prefix \(user:42, key:abc\), or any other identity with --identity/,
    );
  });

  test('the table: one header, left-aligned columns, no time for a block until removed, expired entries marked', () => {
    const table = denyTable(
      [
        { match: '203.0.113.0/24', until: Date.UTC(2026, 0, 1, 1), reason: 'scraper' },
        { match: 'user:42' },
        { match: '2001:db8::/56', until: Date.UTC(2026, 0, 1), reason: 'done' },
      ],
      Date.UTC(2026, 0, 1),
    );
    expect(table).toBe(
      [
        'MATCH           KIND   UNTIL                           REASON',
        '203.0.113.0/24  IPv4   2026-01-01T01:00:00Z            scraper',
        'user:42         ident  -',
        '2001:db8::/56   IPv6   2026-01-01T00:00:00Z (expired)  done',
      ].join('\n'),
    );
  });
});

describe('sluice config deny on Redis', () => {
  const at = () => ['--name', 'api', '--redis', `redis://127.0.0.1:${stores.server.port}`];
  const version = /version (\d+), epoch (\w+) of the deny list of "api" at redis:\/\/127\.0\.0\.1:\d+ \(key sluice:deny:\{api\}\)/;

  test('add, list, replace and remove: each one change of the deny structure; remove of a missing entry exits 3', async () => {
    const before = Date.now();
    const temporary = await sluice(['config', 'deny', 'add', '203.0.113.0/24', '--for', '1h', '--reason', 'scraper', ...at()]);
    expect(temporary.code, temporary.stderr).toBe(0);
    const entry = JSON.parse(temporary.stdout) as { until: number; addedAt: number };
    expect(entry).toMatchObject({ match: '203.0.113.0/24', reason: 'scraper' });
    expect(entry.addedAt).toBeGreaterThanOrEqual(before);
    expect(entry.until - entry.addedAt).toBe(3_600_000);
    expect(temporary.stderr).toMatch(
      /^denied "203\.0\.113\.0\/24" \(IPv4\) until \S+Z: version 1, epoch \w+ of the deny list of "api" at redis:\/\/127\.0\.0\.1:\d+ \(key sluice:deny:\{api\}\); watching instances are told at once/,
    );
    const epoch = version.exec(temporary.stderr)![2];
    expect((await sluice(['config', 'deny', 'add', 'user:42', ...at()])).code).toBe(0);
    expect((await sluice(['config', 'deny', 'add', '2001:db8::/56', '--reason', 'abuse', ...at()])).code).toBe(0);
    expect((await storedDeny(stores.redis, 'api')).map((stored) => stored.match)).toEqual(['2001:db8::/56', '203.0.113.0/24', 'user:42']);
    // The entries are in a structure of their own; the document holds none of them (the first write made an empty
    // one, so that export, config get and the dashboard find the limiter).
    expect(JSON.parse((await stores.redis.get('sluice:config:api'))!)).toEqual({ version: 1, revision: 1, updatedAt: expect.any(Number) });

    const list = await sluice(['config', 'deny', 'list', ...at()]);
    expect(list.code).toBe(0);
    const lines = list.stdout.trimEnd().split('\n');
    expect(lines[0]).toMatch(/^MATCH +KIND +UNTIL +REASON$/);
    expect(
      byMatch(
        lines
          .slice(1)
          .map((line) => line.split(/ {2,}/))
          .map(([match, ...rest]) => ({ match: match!, rest })),
      ),
    ).toEqual([
      { match: '2001:db8::/56', rest: ['IPv6', '-', 'abuse'] },
      { match: '203.0.113.0/24', rest: ['IPv4', expect.stringMatching(/^\d{4}-\d\d-\d\dT[\d:.]+Z$/), 'scraper'] },
      { match: 'user:42', rest: ['ident', '-'] },
    ]);
    expect(list.stderr).toMatch(new RegExp(`^the deny list of "api" holds 3 entries at .*\\(version 3, epoch ${epoch}\\)\n$`));

    const replaced = await sluice(['config', 'deny', 'add', 'user:42', '--reason', 'chargebacks', ...at()]);
    expect(version.exec(replaced.stderr)?.slice(1)).toEqual(['4', epoch]);
    const json = await sluice(['config', 'deny', 'list', '--json', ...at()]);
    expect(byMatch(ndjson<{ match: string; reason?: string }>(json.stdout)).map((e) => [e.match, e.reason])).toEqual([
      ['2001:db8::/56', 'abuse'],
      ['203.0.113.0/24', 'scraper'],
      ['user:42', 'chargebacks'],
    ]);

    const removed = await sluice(['config', 'deny', 'remove', 'user:42', ...at()]);
    expect([removed.code, removed.stderr]).toEqual([0, expect.stringMatching(/^removed "user:42" from the deny list of "api"/)]);
    expect(await storedDenyVersion(stores.redis, 'api')).toEqual({ epoch, version: 5 });
    const again = await sluice(['config', 'deny', 'remove', 'user:42', ...at()]);
    expect([again.code, again.stderr]).toEqual([3, expect.stringMatching(/no entry of the deny list of "api" matches "user:42" exactly/)]);
    expect((await storedDeny(stores.redis, 'api')).length).toBe(2);
  });

  test.each([
    ['203.0.113.0/33', 'is written like an IP address or CIDR block but is not one'],
    ['2001:db8::/129', 'is written like an IP address or CIDR block but is not one'],
    ['1.2.3', 'is written like an IP address or CIDR block but is not one'],
    ['1.2.3.4/-1', 'is written like an IP address or CIDR block but is not one'],
    ['not-an-ip/24', 'is written like an IP address or CIDR block but is not one'],
    [' ', 'is empty or has spaces around it'],
    ['2001:db8::1%eth0', 'has a zone index (%...), which is not part of a client address'],
    [
      '10.9.8.7/24',
      'has bits set past its /24 prefix, so it would match the whole block 10.9.8.0/24: write the block so, or the address alone',
    ],
    ['sk_live_abc123', 'is neither an address or block nor an identity with a prefix'],
  ])('the match %j is refused with exit 2 before anything is stored: it %s', async (match, why) => {
    const args = ['--name', 'bad', '--redis', `redis://127.0.0.1:${stores.server.port}`];
    const refused = await sluice(['config', 'deny', 'add', match, ...args]);
    expect([refused.code, refused.stdout]).toEqual([2, '']);
    expect(refused.stderr).toBe(
      `sluice config: <match> ${JSON.stringify(match)} ${why}; give an address (203.0.113.7, 2001:db8::1), a block (203.0.113.0/24 with a prefix of 0 to 32, 2001:db8::/56 with 0 to 128, optionally after ip:), an identity with a prefix (user:42, key:abc), or any other identity with --identity (an API key)\n`,
    );
    expect(await stores.redis.keys('*bad*')).toEqual([]);
  });

  test('--identity stores an identity without a prefix (an API key), read back as an identity', async () => {
    const args = ['--name', 'keys', '--redis', `redis://127.0.0.1:${stores.server.port}`];
    const added = await sluice(['config', 'deny', 'add', 'sk_live_abc123', '--identity', '--reason', 'leaked', ...args]);
    expect(added.code, added.stderr).toBe(0);
    expect(added.stderr).toMatch(/^denied "sk_live_abc123" \(ident\) until removed/);
    expect(await storedDeny(stores.redis, 'keys')).toMatchObject([{ match: 'sk_live_abc123', reason: 'leaked' }]);
    expect((await sluice(['config', 'deny', 'list', ...args])).stdout).toMatch(/^sk_live_abc123 +ident +- +leaked$/m);
  });

  test.each([
    ['2000', 2_000],
    ['1h30m', 5_400_000],
    ['1.5h', 5_400_000],
    ['3650d', 315_360_000_000],
  ])("--for %s is core's duration grammar: the entry ends %i ms after it was added", async (duration, ms) => {
    const args = ['--name', 'durations', '--redis', `redis://127.0.0.1:${stores.server.port}`];
    const added = await sluice(['config', 'deny', 'add', 'user:timed', '--for', duration, ...args]);
    expect(added.code, added.stderr).toBe(0);
    const entry = JSON.parse(added.stdout) as { until: number; addedAt: number };
    expect(entry.until - entry.addedAt).toBe(ms);
  });

  test.each([
    ['100000000d', 'from 1 ms to 3650d'],
    ['3651d', 'from 1 ms to 3650d'],
    ['0', 'from 1 ms to 3650d'],
    ['-5m', 'from 1 ms to 3650d'],
    [' 1h', 'got " 1h" (no spaces around it)'],
    ['1.5ms', 'got "1.5ms" (not a whole number of ms)'],
    ['30m1h', 'got "30m1h" (units go largest first, each once: d, h, m, s, ms)'],
    ['soon', 'got "soon"'],
  ])('--for %j is refused with exit 2 and nothing is written (%s)', async (duration, why) => {
    const args = ['--name', 'bad', '--redis', `redis://127.0.0.1:${stores.server.port}`];
    const refused = await sluice(['config', 'deny', 'add', 'user:x', '--for', duration, ...args]);
    expect([refused.code, refused.stdout]).toEqual([2, '']);
    expect(refused.stderr).toMatch(
      /^sluice config: --for must be a duration from 1 ms to 3650d \(a whole number of ms or a string like '250ms', '1s', '5m', '1h', '1d'\), got /,
    );
    expect(refused.stderr).toContain(why);
    expect(await stores.redis.keys('*bad*')).toEqual([]);
  });

  test('other bad input exits 2 naming it: a duration, a long reason, a control character, a missing match', async () => {
    const args = ['--name', 'bad', '--redis', `redis://127.0.0.1:${stores.server.port}`];
    const duration = await sluice(['config', 'deny', 'add', 'user:1', '--for', 'soon', ...args]);
    expect([duration.code, duration.stderr]).toEqual([2, expect.stringMatching(/^sluice config: --for must be/)]);
    const reason = await sluice(['config', 'deny', 'add', 'user:1', '--reason', 'x'.repeat(201), ...args]);
    expect([reason.code, reason.stderr]).toEqual([2, expect.stringMatching(/entry\.reason: must be a string of at most 200 characters/)]);
    const control = await sluice(['config', 'deny', 'add', 'user:\u0007', ...args]);
    expect([control.code, control.stderr]).toEqual([2, expect.stringMatching(/entry\.match: must be an identity or an IP range/)]);
    const none = await sluice(['config', 'deny', 'add', ...args]);
    expect([none.code, none.stderr]).toEqual([2, expect.stringMatching(/missing required argument 'match'/)]);
    expect(await stores.redis.keys('*bad*')).toEqual([]);
  });

  test('an unreachable Redis exits 1; a list with no document prints nothing and says the list is empty', async () => {
    const down = await sluice(['config', 'deny', 'list', '--name', 'api', '--redis', 'redis://127.0.0.1:1']);
    expect([down.code, down.stderr]).toEqual([1, expect.stringMatching(/could not connect to Redis at redis:\/\/127\.0\.0\.1:1/)]);
    const empty = await sluice(['config', 'deny', 'list', '--name', 'nobody', '--redis', `redis://127.0.0.1:${stores.server.port}`]);
    expect([empty.code, empty.stdout, empty.stderr]).toEqual([0, '', expect.stringMatching(/the deny list of "nobody" holds 0 entries/)]);
  });
});

describe('sluice config deny on SQLite and Upstash', () => {
  test('SQLite: add creates the file, list and remove read it; list of a missing file exits 1 and creates nothing', async () => {
    const file = join(stores.folder, 'limits.db');
    const at = ['--name', 'api', '--sqlite', file];
    const added = await sluice(['config', 'deny', 'add', '198.51.100.0/24', '--for', '30m', ...at]);
    expect(added.code, added.stderr).toBe(0);
    expect(added.stderr).toMatch(/watching instances read it at their next refresh/);
    expect((await sluice(['config', 'deny', 'add', 'key:abc', ...at])).code).toBe(0);
    const json = await sluice(['config', 'deny', 'list', '--json', ...at]);
    expect(byMatch(ndjson<{ match: string }>(json.stdout)).map((e) => e.match)).toEqual(['198.51.100.0/24', 'key:abc']);
    expect((await sluice(['config', 'deny', 'remove', '198.51.100.0/24', ...at])).code).toBe(0);
    expect(ndjson((await sluice(['config', 'deny', 'list', '--json', ...at])).stdout)).toMatchObject([{ match: 'key:abc' }]);
    const missing = join(stores.folder, 'typo.db');
    const listed = await sluice(['config', 'deny', 'list', '--name', 'api', '--sqlite', missing]);
    expect([listed.code, listed.stderr]).toEqual([1, expect.stringMatching(/could not open the SQLite file/)]);
    expect(existsSync(missing)).toBe(false);
  });

  test('Upstash: add, list and remove through the REST fixture; the entry lands in the deny structure of its Redis', async () => {
    const env = { UPSTASH_REDIS_REST_URL: stores.fixture.url, UPSTASH_REDIS_REST_TOKEN: stores.fixture.token };
    const added = await sluice(['config', 'deny', 'add', '2001:db8:1::/48', '--reason', 'botnet', '--name', 'edge'], env);
    expect(added.code, added.stderr).toBe(0);
    expect(added.stderr).toMatch(/: version 1, epoch \w+ of the deny list of "edge" at http/);
    expect(await storedDeny(stores.redis, 'edge')).toMatchObject([{ match: '2001:db8:1::/48', reason: 'botnet' }]);
    const list = await sluice(['config', 'deny', 'list', '--name', 'edge'], env);
    expect(list.stdout).toMatch(/^2001:db8:1::\/48 +IPv6 +- +botnet$/m);
    expect((await sluice(['config', 'deny', 'remove', '2001:db8:1::/48', '--name', 'edge'], env)).code).toBe(0);
    expect(await storedDeny(stores.redis, 'edge')).toEqual([]);
  });
});
