/**
 * `sluice config deny` on a list of 100,000 entries kept in the Redis config source's deny structure (written here by
 * core's addDenyEntries), the built binary against a real redis-server: `add` and `remove` are one change of the
 * structure each (its version moves by one) and `remove` of a match the list does not hold exits 3 with nothing
 * changed; `list --json --limit 100` prints 100 distinct entries of the list from a few reads (counted by the
 * server's own command statistics), `--offset` goes on to other entries, and the whole list streams every entry
 * once; `deny import` of a feed applies only the difference (a second import of the same file changes nothing, the
 * version stays); `sluice config export`, the store emptied, and `sluice config import` put every entry back.
 * How long each command takes is the bench's (pnpm bench http-deny), not asserted here.
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, test } from 'vitest';
import { addDenyEntries, setLimiterMode, type DenyEntry } from '@sluice/core/config';
import { redisConfigSource } from '@sluice/redis';
import { byMatch, ndjson, sluice, storedDeny, storedDenyVersion, useStores } from './run-cli.js';

const stores = useStores('sluice-cli-deny-100k-');

const SIZE = 100_000;
const ADDED_AT = 1_700_000_000_000;

/** 100,000 distinct entries of every kind: addresses, IPv6 blocks, identities, some with a reason or an end. */
function bigList(): DenyEntry[] {
  const list: DenyEntry[] = [];
  for (let i = 0; i < SIZE; i++) {
    if (i % 4 === 0) list.push({ match: `10.${(i >> 16) & 255}.${(i >> 8) & 255}.${i & 255}`, addedAt: ADDED_AT });
    else if (i % 4 === 1)
      list.push({
        match: `2001:db8:${(i >> 16).toString(16)}:${(i & 0xffff).toString(16)}::/64`,
        until: 4_102_444_800_000,
        addedAt: ADDED_AT,
      });
    else list.push({ match: `user:${i}`, ...(i % 10 === 2 ? { reason: 'scraper' } : {}), addedAt: ADDED_AT });
  }
  return list;
}

async function fill(name: string, list: readonly DenyEntry[]): Promise<void> {
  await addDenyEntries(redisConfigSource(stores.redis), name, list);
}

const at = (name: string) => ['--name', name, '--redis', `redis://127.0.0.1:${stores.server.port}`];

/** Script calls the server has run since its statistics were reset (each read or change of the structure is one). */
async function scriptCalls(): Promise<number> {
  const stats = await stores.redis.info('commandstats');
  let calls = 0;
  for (const [, count] of stats.matchAll(/^cmdstat_(?:eval|evalsha|eval_ro|evalsha_ro):calls=(\d+)/gm)) calls += Number(count);
  return calls;
}

describe('sluice config deny on a 100,000-entry list in the deny structure (Redis)', () => {
  test('add and remove are one change each; remove of a match the list does not hold exits 3 and changes nothing', async () => {
    await fill('big', bigList());
    const before = await storedDenyVersion(stores.redis, 'big');
    const added = await sluice(['config', 'deny', 'add', 'user:new', '--reason', 'chargebacks', ...at('big')]);
    expect(added.code, added.stderr).toBe(0);
    expect(JSON.parse(added.stdout)).toMatchObject({ match: 'user:new', reason: 'chargebacks' });
    expect(added.stderr).toContain(`version ${before!.version + 1}, epoch ${before!.epoch} of the deny list of "big"`);
    expect(await storedDenyVersion(stores.redis, 'big')).toEqual({ ...before, version: before!.version + 1 });

    for (const match of ['user:new', 'user:2']) {
      const removed = await sluice(['config', 'deny', 'remove', match, ...at('big')]);
      expect([removed.code, removed.stderr]).toEqual([
        0,
        expect.stringMatching(new RegExp(`^removed "${match}" from the deny list of "big"`)),
      ]);
    }
    expect(await storedDenyVersion(stores.redis, 'big')).toEqual({ ...before, version: before!.version + 3 });
    const missing = await sluice(['config', 'deny', 'remove', 'user:new', ...at('big')]);
    expect([missing.code, missing.stderr]).toEqual([
      3,
      expect.stringMatching(/no entry of the deny list of "big" matches "user:new" exactly/),
    ]);
    const list = await storedDeny(stores.redis, 'big');
    expect(list).toHaveLength(SIZE - 1);
    expect(list).toEqual(byMatch(bigList().filter((entry) => entry.match !== 'user:2')));
  });

  test('list --json --limit 100 prints 100 entries from a few reads; --offset goes on; the whole list streams every entry once', async () => {
    const stored = bigList();
    await fill('listed', stored);
    const matches = new Set(stored.map((entry) => entry.match));

    await stores.redis.config('RESETSTAT');
    const first = await sluice(['config', 'deny', 'list', '--json', '--limit', '100', ...at('listed')]);
    // A whole read takes 100 pages of 1,000: a page of 100 takes one, and one more at most to see that more follow.
    expect(await scriptCalls()).toBeLessThanOrEqual(3);
    expect(first.code, first.stderr).toBe(0);
    const page = ndjson<DenyEntry>(first.stdout);
    expect(page).toHaveLength(100);
    expect(new Set(page.map((entry) => entry.match)).size).toBe(100);
    for (const entry of page) expect(matches.has(entry.match), entry.match).toBe(true);
    expect(first.stderr).toMatch(/^printed entries 1 to 100 of the deny list of "listed" at .*; the next page: --offset 100\n$/);

    const second = ndjson<DenyEntry>(
      (await sluice(['config', 'deny', 'list', '--json', '--limit', '100', '--offset', '100', ...at('listed')])).stdout,
    );
    expect(second).toHaveLength(100);
    const firstMatches = new Set(page.map((entry) => entry.match));
    expect(second.filter((entry) => firstMatches.has(entry.match))).toEqual([]);

    const whole = await sluice(['config', 'deny', 'list', '--json', ...at('listed')]);
    expect(whole.code, whole.stderr).toBe(0);
    expect(byMatch(ndjson<DenyEntry>(whole.stdout))).toEqual(byMatch(stored));
    expect(whole.stderr).toMatch(/^the deny list of "listed" holds 100000 entries at /);
  });

  test('import of a feed applies only the difference; the same feed again writes nothing and the version does not move', async () => {
    const stored = bigList();
    await fill('fed', stored);
    const before = await storedDenyVersion(stores.redis, 'fed');
    // The feed: every stored match but the first 50, and 50 new ones.
    const feed = [...stored.slice(50).map((entry) => entry.match), ...Array.from({ length: 50 }, (_, i) => `key:fresh-${i}`)];
    const file = join(stores.folder, 'feed.txt');
    writeFileSync(file, `${feed.join('\n')}\n`);
    const imported = await sluice(['config', 'deny', 'import', file, '--replace', ...at('fed')]);
    expect(imported.code, imported.stderr).toBe(0);
    // 50 added in one change, 50 removed in another: not a rewrite of the 100,000.
    const after = { ...before!, version: before!.version + 2 };
    expect(JSON.parse(imported.stdout)).toEqual({
      added: 50,
      removed: 50,
      unchanged: SIZE - 50,
      expired: 0,
      entries: SIZE,
      version: after,
      written: true,
    });
    const list = await storedDeny(stores.redis, 'fed');
    expect(list.map((entry) => entry.match)).toEqual([...feed].sort());
    // The entries the feed kept are as they were (reason, end, addedAt).
    expect(list.filter((entry) => !entry.match.startsWith('key:fresh-'))).toEqual(byMatch(stored.slice(50)));

    const again = await sluice(['config', 'deny', 'import', file, '--replace', ...at('fed')]);
    expect([again.code, JSON.parse(again.stdout)]).toEqual([
      0,
      { added: 0, removed: 0, unchanged: SIZE, expired: 0, entries: SIZE, version: after, written: false },
    ]);
    expect(await storedDenyVersion(stores.redis, 'fed')).toEqual(after);
  });

  test('export, the store emptied, import: every entry is back in the deny structure, the document without a deny field', async () => {
    const stored = bigList();
    await setLimiterMode(redisConfigSource(stores.redis), 'backup', 'shadow');
    await fill('backup', stored);
    const exported = await sluice(['config', 'export', '--names', 'backup', '--redis', `redis://127.0.0.1:${stores.server.port}`]);
    expect(exported.code, exported.stderr).toBe(0);
    const backup = JSON.parse(exported.stdout) as { limiters: { backup: { deny: DenyEntry[]; mode: string } } };
    expect(backup.limiters.backup.mode).toBe('shadow');
    expect(backup.limiters.backup.deny).toHaveLength(SIZE);

    await stores.redis.flushall();
    expect(await storedDeny(stores.redis, 'backup')).toEqual([]);
    const imported = await sluice(['config', 'import', '-', '--redis', `redis://127.0.0.1:${stores.server.port}`], {}, exported.stdout);
    expect(imported.code, imported.stderr).toBe(0);
    expect(imported.stderr).toMatch(/^restored "backup" at revision 1, 100000 deny entries/);
    expect(await storedDeny(stores.redis, 'backup')).toEqual(byMatch(stored));
    const document = JSON.parse((await stores.redis.get('sluice:config:backup'))!) as Record<string, unknown>;
    expect(document).toMatchObject({ revision: 1, mode: 'shadow' });
    expect(document).not.toHaveProperty('deny');
  });
});
