/**
 * Deny entries that are not valid, already in the store (written by another version or by hand, past every writer's
 * checks: here written directly into a real redis-server and a real SQLite file): one such entry must not cost the
 * rest. In a document's `deny` field, as an older release kept the list (read until the first deny write moves it
 * into the store's deny structure): a watching instance applies the other entries with one warning, and
 * `sluice config deny list` and `sluice config get` (the built binary) print the others with one warning and exit 0.
 * In the deny structure: `deny list` prints the others with one warning and `deny remove` removes a bad entry by its
 * match. Among them an entry whose `until` is past the latest time a Date holds (8.64e15 ms) but below 2^53, which
 * `deny add --for 100000000d` used to store: it made every `list` exit 1 ("Invalid time value").
 */
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { afterAll, describe, expect, test } from 'vitest';
import { createLimiter, fixedWindow } from '@sluice/core';
import { watchConfig, type ConfigSource, type ConfigWarning, type DenyEntry } from '@sluice/core/config';
import { memoryStore } from '@sluice/memory';
import { redisConfigSource } from '@sluice/redis';
import { sqliteConfigSource } from '@sluice/sqlite';
import { byMatch, ndjson, sluice, useStores } from './run-cli.js';

const stores = useStores('sluice-cli-stored-deny-');
const databases: Database.Database[] = [];
afterAll(() => {
  for (const db of databases) db.close();
});

/** Past the latest Date (8.64e15) but a safe integer: what `--for 100000000d` added to a 2026 clock gave. */
const PAST_THE_LAST_DATE = 8_640_000_000_000_000 + 1_800_000_000_000;
const GOOD = [
  { match: '203.0.113.0/24', reason: 'scraper', addedAt: 1_700_000_000_000 },
  { match: 'user:42', until: 4_102_444_800_000, addedAt: 1_700_000_000_000 },
];
/** A document as an older version or a hand edit left it: three bad entries among good ones. */
const STORED = JSON.stringify({
  version: 1,
  revision: 5,
  updatedAt: 1_700_000_000_000,
  deny: [
    GOOD[0],
    { match: 'user:x', until: PAST_THE_LAST_DATE, addedAt: 1_700_000_000_000 },
    { match: 'key:y', until: -1 },
    GOOD[1],
    'plain text',
  ],
});

/** Entries that are not valid, as another version's writer might have put them in a deny structure. */
const BAD_IN_STRUCTURE = [
  { match: 'user:x', until: PAST_THE_LAST_DATE, addedAt: 1_700_000_000_000 },
  { match: 'key:y', until: -1 },
];

/** Where the document is written directly, and the flags the CLI reaches it with. */
interface Place {
  label: string;
  source: () => ConfigSource;
  flags: (name: string) => string[];
  stored: (name: string) => Promise<string | null | undefined>;
}

const places: Place[] = [
  {
    label: 'Redis',
    source: () => redisConfigSource(stores.redis),
    flags: (name) => ['--name', name, '--redis', `redis://127.0.0.1:${stores.server.port}`],
    stored: async (name) => stores.redis.get(`sluice:config:${name}`),
  },
  {
    label: 'SQLite',
    source: () => {
      const db = new Database(join(stores.folder, 'fleet.db'));
      databases.push(db);
      return sqliteConfigSource(db);
    },
    flags: (name) => ['--name', name, '--sqlite', join(stores.folder, 'fleet.db')],
    stored: async (name) => {
      const db = new Database(join(stores.folder, 'fleet.db'));
      try {
        return await sqliteConfigSource(db).read(name);
      } finally {
        db.close();
      }
    },
  },
];

describe.each(places)('deny entries that are not valid, written directly into $label', (place) => {
  test('a watching instance applies the other entries, with one warning naming the bad ones', async () => {
    const source = place.source();
    await source.write('watched', STORED);
    const warnings: ConfigWarning[] = [];
    const limiter = createLimiter({ store: memoryStore(), rules: fixedWindow({ limit: 5, window: '1m' }), name: 'watched' });
    const watcher = watchConfig(limiter, source, { onWarning: (warning) => void warnings.push(warning) });
    await watcher.ready;
    await watcher.stop();
    expect(limiter.deny).toEqual(GOOD);
    expect(warnings.map((warning) => warning.code)).toEqual(['invalid_deny_entry']);
    expect(warnings[0]!.message).toContain('revision 5: 3 deny entries are not valid and ignored, the other entries apply');
    expect(warnings[0]!.message).toContain(
      `deny[1].until: must be an integer from 0 to 8640000000000000 (epoch ms, within what a Date holds), got ${PAST_THE_LAST_DATE}`,
    );
  });

  test('deny list prints the other entries and exits 0, with one warning; --json too', async () => {
    await place.source().write('listed', STORED);
    const list = await sluice(['config', 'deny', 'list', ...place.flags('listed')]);
    expect(list.code, list.stderr).toBe(0);
    expect(
      list.stdout
        .trimEnd()
        .split('\n')
        .slice(1)
        .map((line) => line.split(/ {2,}/)[0]),
    ).toEqual(['203.0.113.0/24', 'user:42']);
    const warning = list.stderr.split('\n').filter((line) => line.startsWith('sluice config deny list:'));
    expect(warning).toHaveLength(1);
    expect(warning[0]).toContain('the deny list of "listed" holds 3 entries that are not valid, left out here as instances leave them out');
    expect(warning[0]).toContain('deny[1].until: must be an integer from 0 to 8640000000000000');
    expect(warning[0]).toContain('sluice config deny remove <match> removes one');
    expect(list.stderr).toMatch(/the deny list of "listed" holds 2 entries/);
    const json = await sluice(['config', 'deny', 'list', '--json', ...place.flags('listed')]);
    expect([json.code, ndjson(json.stdout)]).toEqual([0, GOOD]);
  });

  test('an entry past the latest Date, as --for 100000000d stored it, no longer stops list: the others are listed, exit 0', async () => {
    const far = { match: 'user:x', until: PAST_THE_LAST_DATE, addedAt: 1_700_000_000_000 };
    await place.source().write('far-listed', JSON.stringify({ version: 1, revision: 2, updatedAt: 0, deny: [GOOD[0], far] }));
    const list = await sluice(['config', 'deny', 'list', ...place.flags('far-listed')]);
    expect([list.code, list.stdout]).toEqual([
      0,
      expect.stringMatching(/^MATCH +KIND +UNTIL +REASON\n203\.0\.113\.0\/24 +IPv4 +- +scraper\n$/),
    ]);
    expect(list.stderr).toMatch(
      /^sluice config deny list: the deny list of "far-listed" holds 1 entry that is not valid, left out here as instances leave it out \(deny\[1\]\.until: must be an integer from 0 to 8640000000000000/,
    );
    expect(list.stderr).not.toMatch(/Invalid time value/);
  });

  test('get prints the document as instances apply it and exits 0, with one warning', async () => {
    await place.source().write('got', STORED);
    const got = await sluice(['config', 'get', ...place.flags('got')]);
    expect(got.code, got.stderr).toBe(0);
    expect(JSON.parse(got.stdout)).toEqual({ version: 1, revision: 5, updatedAt: 1_700_000_000_000, deny: GOOD });
    expect(got.stderr.trimEnd().split('\n')).toEqual([
      expect.stringMatching(/^sluice config get: the deny list of "got" holds 3 entries that are not valid/),
    ]);
  });

  test('in the deny structure: list prints the others with one warning, remove removes a bad entry by its match', async () => {
    const source = place.source();
    // Written past every writer's check, as another version's writer might: a source stores entries as given.
    await source.deny!.change('removed', { add: [GOOD[0]!, BAD_IN_STRUCTURE[0], GOOD[1]!, BAD_IN_STRUCTURE[1]] as DenyEntry[] });
    const list = await sluice(['config', 'deny', 'list', '--json', ...place.flags('removed')]);
    expect([list.code, byMatch(ndjson<DenyEntry>(list.stdout))]).toEqual([0, byMatch(GOOD)]);
    const warning = list.stderr.split('\n').filter((line) => line.startsWith('sluice config deny list:'));
    expect(warning).toEqual([expect.stringContaining('the deny list of "removed" holds 2 entries that are not valid, left out here')]);
    expect(warning[0]).toContain('.until: must be an integer from 0 to 8640000000000000');
    expect(warning[0]).toContain('sluice config deny remove <match> removes one');
    expect(warning[0]).not.toContain('any write drops them all');
    expect(list.stderr).toMatch(/^the deny list of "removed" holds 2 entries at .*\(version 1, /m);

    const removed = await sluice(['config', 'deny', 'remove', 'key:y', ...place.flags('removed')]);
    expect([removed.code, removed.stderr]).toEqual([0, expect.stringMatching(/^removed "key:y" from the deny list of "removed"/)]);
    const after = await sluice(['config', 'deny', 'list', ...place.flags('removed')]);
    expect(after.stderr.trimEnd().split('\n')).toEqual([
      expect.stringMatching(/^sluice config deny list: the deny list of "removed" holds 1 entry that is not valid/),
      expect.stringMatching(/^the deny list of "removed" holds 2 entries/),
    ]);
  });

  test('add --for past the latest Date is refused with exit 2 and nothing is written (it used to store the entry, then exit 1)', async () => {
    const refused = await sluice(['config', 'deny', 'add', 'user:x', '--for', '100000000d', ...place.flags('far')]);
    expect([refused.code, refused.stdout]).toEqual([2, '']);
    expect(refused.stderr).toMatch(/^sluice config: --for must be a duration from 1 ms to 3650d .*, got "100000000d"\n$/);
    expect(await place.stored('far')).toBeFalsy();
  });
});
