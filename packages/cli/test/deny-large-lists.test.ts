/**
 * The deny list's operator tools for large lists, the built binary run as a process against a real redis-server and
 * a real SQLite file, each keeping the list in its deny structure (written here by core's addDenyEntries):
 * `sluice config deny list` in pages (`--limit`, `--offset`) and as one JSON entry per line (`--json`), each entry
 * printed exactly once across pages and streams longer than one output chunk; and `sluice config deny import`, which
 * applies a file of matches as only the difference (an entry already listed keeps its reason and addedAt, a feed
 * that matches the list writes nothing and leaves the structure's version where it was), removes what the file does
 * not list only with `--replace`, reads comments, blank lines, CRLF and standard input, and refuses a file with a bad
 * line by its number, writing nothing. A document an older release wrote with the list in its `deny` field is listed
 * as it is and moved into the structure by the first import. A list of 100,000 entries: deny-structure-large.test.ts.
 */
import { spawn } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import Database from 'better-sqlite3';
import { describe, expect, test } from 'vitest';
import { addDenyEntries, readDenyList, type ConfigSource, type DenyEntry, type DenyListSource } from '@sluice/core/config';
import { redisConfigSource } from '@sluice/redis';
import { sqliteConfigSource } from '@sluice/sqlite';
import { byMatch, ndjson, sluice, useStores } from './run-cli.js';

const stores = useStores('sluice-cli-large-deny-');

/** More entries than one chunk of output (1,000 lines), of every kind, each match distinct. */
const COUNT = 2_345;
const ADDED_AT = 1_700_000_000_000;

function entries(count: number): DenyEntry[] {
  const list: DenyEntry[] = [];
  for (let i = 0; i < count; i++) {
    if (i % 3 === 0) list.push({ match: `10.${(i >> 8) & 255}.${i & 255}.0/24`, reason: 'scraper', addedAt: ADDED_AT });
    else if (i % 3 === 1) list.push({ match: `2001:db8:${i.toString(16)}::/48`, until: 4_102_444_800_000, addedAt: ADDED_AT });
    else list.push({ match: `user:${i}`, addedAt: ADDED_AT });
  }
  return list;
}

/** A config source with a deny structure, opened for one use, and the flags the CLI reaches the same store with. */
interface Place {
  label: string;
  use: <T>(action: (source: ConfigSource & { deny: DenyListSource }) => Promise<T>) => Promise<T>;
  flags: (name: string) => string[];
}

const places: Place[] = [
  {
    label: 'Redis',
    use: (action) => action(redisConfigSource(stores.redis)),
    flags: (name) => ['--name', name, '--redis', `redis://127.0.0.1:${stores.server.port}`],
  },
  {
    label: 'SQLite',
    use: async (action) => {
      const db = new Database(join(stores.folder, 'fleet.db'));
      try {
        return await action(sqliteConfigSource(db));
      } finally {
        db.close();
      }
    },
    flags: (name) => ['--name', name, '--sqlite', join(stores.folder, 'fleet.db')],
  },
];

/** Stores `list` as `name`'s deny list, through core's writer. */
async function fill(place: Place, name: string, list: readonly DenyEntry[]): Promise<void> {
  await place.use((source) => addDenyEntries(source, name, list));
}

/** The entries the structure holds, sorted by match. */
async function held(place: Place, name: string): Promise<DenyEntry[]> {
  return byMatch([...(await place.use((source) => readDenyList(source.deny, name))).values()]);
}

/** The structure's version (a write that changes nothing leaves it where it was). */
async function versionOf(place: Place, name: string): Promise<number | undefined> {
  return (await place.use(async (source) => (await source.deny.readChanges(name, undefined)).version))?.version;
}

describe.each(places)('a large deny list in $label', (place) => {
  test('list --limit and --offset page through every entry exactly once, as a table and as NDJSON', async () => {
    const stored = entries(COUNT);
    await fill(place, 'paged', stored);
    for (const json of [false, true]) {
      const seen: string[] = [];
      let offset = 0;
      let last = '';
      for (let pages = 0; pages < 10; pages++) {
        const page = await sluice([
          'config',
          'deny',
          'list',
          '--limit',
          '1000',
          '--offset',
          String(offset),
          ...(json ? ['--json'] : []),
          ...place.flags('paged'),
        ]);
        expect(page.code, page.stderr).toBe(0);
        const matches = json
          ? ndjson<DenyEntry>(page.stdout).map((entry) => entry.match)
          : page.stdout
              .trimEnd()
              .split('\n')
              .slice(1)
              .map((line) => line.split(/ {2,}/)[0]!);
        expect(matches.length).toBeLessThanOrEqual(1000);
        seen.push(...matches);
        last = page.stderr;
        const next = /the next page: --offset (\d+)/.exec(page.stderr);
        if (next === null) break;
        // A page short of the end says where the next starts, and the structure's version it read.
        expect(page.stderr).toMatch(
          new RegExp(`^printed entries ${offset + 1} to ${offset + 1000} of the deny list of "paged" at .*\\(version \\d+, epoch \\w+\\)`),
        );
        offset = Number(next[1]);
      }
      // The last page read to the end: the list's size is known.
      expect(last).toMatch(new RegExp(`^the deny list of "paged" holds ${COUNT} entries at .*; printed entries 2001 to ${COUNT}\\n$`));
      expect(seen.sort()).toEqual(stored.map((entry) => entry.match).sort());
    }
  });

  test('list --json prints every entry as stored, one JSON object a line; the table has every match once', async () => {
    const stored = entries(COUNT);
    await fill(place, 'streamed', stored);
    const json = await sluice(['config', 'deny', 'list', '--json', ...place.flags('streamed')]);
    expect(json.code, json.stderr).toBe(0);
    expect(json.stdout.split('\n')).toHaveLength(COUNT + 1);
    expect(byMatch(ndjson<DenyEntry>(json.stdout))).toEqual(byMatch(stored));
    expect(json.stderr).toMatch(new RegExp(`^the deny list of "streamed" holds ${COUNT} entries at `));
    const table = await sluice(['config', 'deny', 'list', ...place.flags('streamed')]);
    const rows = table.stdout.trimEnd().split('\n');
    expect(rows[0]).toMatch(/^MATCH +KIND +UNTIL +REASON$/);
    expect(
      rows
        .slice(1)
        .map((line) => line.split(/ {2,}/)[0])
        .sort(),
    ).toEqual(stored.map((entry) => entry.match).sort());
  });

  test('list --json read by a reader that stops after its first chunk (| head): exit 0, no error', async () => {
    const stored = entries(COUNT);
    await fill(place, 'headed', stored);
    const child = spawn(
      process.execPath,
      [fileURLToPath(new URL('../dist/cli.js', import.meta.url)), 'config', 'deny', 'list', '--json', ...place.flags('headed')],
      {
        // NODE_OPTIONS goes through, as in run-cli.ts: on Node 22 and 24 it preloads the better-sqlite3 built for them.
        env: { PATH: process.env.PATH, ...(process.env.NODE_OPTIONS === undefined ? {} : { NODE_OPTIONS: process.env.NODE_OPTIONS }) },
        stdio: ['ignore', 'pipe', 'pipe'],
      },
    );
    let first = '';
    let stderr = '';
    // Read up to the end of the first line (a chunk may hold less than a line, or nothing), then stop reading.
    const onData = (chunk: Buffer): void => {
      first += chunk.toString();
      if (!first.includes('\n')) return;
      child.stdout.off('data', onData);
      child.stdout.destroy();
    };
    child.stdout.on('data', onData);
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    const code = await new Promise<number | null>((resolve) => child.once('close', resolve));
    expect(stored).toContainEqual(JSON.parse(first.split('\n')[0]!));
    // It may have written everything before the reader went: then it read the whole list.
    expect([code, stderr]).toEqual([
      0,
      expect.stringMatching(/^(the deny list of "headed" holds 2345 entries|printed entries 1 to \d+ of the deny list of "headed") at /),
    ]);
  });

  test('list --offset past the end prints nothing and says so; a bad --limit or --offset exits 2 naming it', async () => {
    await fill(place, 'short', entries(3));
    const past = await sluice(['config', 'deny', 'list', '--offset', '3', ...place.flags('short')]);
    expect([past.code, past.stdout]).toEqual([0, '']);
    expect(past.stderr).toMatch(/^the deny list of "short" holds 3 entries at .*; printed none \(--offset 3 is past the end\)\n$/);
    for (const [flag, value] of [
      ['--limit', '0'],
      ['--limit', '-5'],
      ['--offset', '1.5'],
      ['--limit', 'ten'],
    ]) {
      const bad = await sluice(['config', 'deny', 'list', flag!, value!, ...place.flags('short')]);
      expect([bad.code, bad.stdout, bad.stderr]).toEqual([2, '', expect.stringContaining(`${flag} must be a whole number of entries`)]);
    }
  });

  test('import adds only what the list lacks: a listed entry keeps its reason and addedAt; the same feed again writes nothing', async () => {
    const stored = entries(COUNT);
    await fill(place, 'fed', stored);
    const before = await versionOf(place, 'fed');
    const kept = stored.slice(0, 2_000).map((entry) => entry.match);
    const feed = [
      '# a feed of matches',
      ...kept.slice(0, 1_000),
      '',
      '   # an indented comment',
      ...kept.slice(1_000),
      '  203.0.113.7  ',
      'user:new',
      'user:new',
      '2001:db8:ffff::/48',
    ].join('\r\n');
    const file = join(stores.folder, `feed-${place.label}.txt`);
    writeFileSync(file, `${feed}\r\n`);
    const imported = await sluice(['config', 'deny', 'import', file, '--reason', 'feed', '--for', '1h', ...place.flags('fed')]);
    expect(imported.code, imported.stderr).toBe(0);
    // Three entries added: one change of the structure.
    const after = await versionOf(place, 'fed');
    expect(after).toBe(before! + 1);
    expect(JSON.parse(imported.stdout)).toEqual({
      added: 3,
      removed: 0,
      unchanged: 2_000,
      expired: 0,
      entries: COUNT + 3,
      version: { epoch: expect.any(String), version: after },
      written: true,
    });
    expect(imported.stderr).toMatch(
      new RegExp(`^added 3, removed 0, unchanged 2000: version ${after}, epoch \\w+ of the deny list of "fed" at .* holds ${COUNT + 3};`),
    );
    const list = await held(place, 'fed');
    // Every entry that was listed is as it was; the new ones have the shared reason and end.
    const added = list.filter((entry) => entry.reason === 'feed');
    expect(list.filter((entry) => entry.reason !== 'feed')).toEqual(byMatch(stored));
    expect(added.map((entry) => entry.match)).toEqual(['2001:db8:ffff::/48', '203.0.113.7', 'user:new']);
    expect(added[0]!.until! - added[0]!.addedAt!).toBe(3_600_000);
    expect(added[0]!.addedAt).toBeGreaterThan(ADDED_AT);

    // The same feed again: nothing differs, nothing is written, the version stays.
    const again = await sluice(['config', 'deny', 'import', file, ...place.flags('fed')]);
    expect([again.code, JSON.parse(again.stdout)]).toEqual([0, expect.objectContaining({ added: 0, unchanged: 2_003, written: false })]);
    expect(again.stderr).toMatch(/^nothing to change: added 0, removed 0, unchanged 2003/);
    expect(await versionOf(place, 'fed')).toBe(after);
  });

  test('import --replace removes every entry the file does not list, keeping the ones it lists as they were', async () => {
    const stored = entries(30);
    await fill(place, 'replaced', stored);
    const input = ['user:2', stored[0]!.match, 'user:fresh', ''].join('\n');
    const replaced = await sluice(['config', 'deny', 'import', '-', '--replace', ...place.flags('replaced')], {}, input);
    expect(replaced.code, replaced.stderr).toBe(0);
    expect(JSON.parse(replaced.stdout)).toMatchObject({ added: 1, removed: 28, unchanged: 2, entries: 3, written: true });
    const list = await held(place, 'replaced');
    expect(list.filter((entry) => entry.match !== 'user:fresh')).toEqual(byMatch([stored[0]!, stored[2]!]));
    expect(list.map((entry) => entry.match)).toContain('user:fresh');
  });

  test('import --dry-run says what would change and writes nothing', async () => {
    await fill(place, 'dry', entries(5));
    const before = await versionOf(place, 'dry');
    const dry = await sluice(
      ['config', 'deny', 'import', '-', '--replace', '--dry-run', ...place.flags('dry')],
      {},
      'user:2\nuser:other\n',
    );
    expect(dry.code, dry.stderr).toBe(0);
    expect(JSON.parse(dry.stdout)).toMatchObject({ added: 1, removed: 4, unchanged: 1, entries: 2, written: false });
    expect(dry.stderr).toMatch(/^dry run, nothing written: added 1, removed 4, unchanged 1; the deny list of "dry" at .* would hold 2\n$/);
    expect(await versionOf(place, 'dry')).toBe(before);
    expect(await held(place, 'dry')).toEqual(byMatch(entries(5)));
  });

  test('import refuses a file with a bad line: exit 2, each bad line named by its number, nothing written', async () => {
    await fill(place, 'refused', entries(5));
    const before = await versionOf(place, 'refused');
    const input = ['# comment', 'user:ok', '10.9.8.7/24', '', 'sk_live_abc', `user:${'x'.repeat(300)}`, '203.0.113.9'].join('\r\n');
    const refused = await sluice(['config', 'deny', 'import', '-', ...place.flags('refused')], {}, input);
    expect([refused.code, refused.stdout]).toEqual([2, '']);
    expect(refused.stderr).toContain('line 3 "10.9.8.7/24" has bits set past its /24 prefix');
    expect(refused.stderr).toContain('line 5 "sk_live_abc" is neither an address or block nor an identity with a prefix');
    expect(refused.stderr).toContain('line 6: match: must be an identity or an IP range');
    expect(refused.stderr).toContain('"-": 3 lines refused, so nothing was written');
    expect(refused.stderr).not.toMatch(/line [1247]\b/);
    expect(await versionOf(place, 'refused')).toBe(before);

    // --identity reads an unprefixed line as an identity, as deny add --identity does.
    const identity = await sluice(['config', 'deny', 'import', '-', '--identity', ...place.flags('refused')], {}, 'sk_live_abc\n');
    expect([identity.code, JSON.parse(identity.stdout)]).toEqual([0, expect.objectContaining({ added: 1, written: true })]);
    expect(await versionOf(place, 'refused')).toBe(before! + 1);
  });

  test('a document an older release wrote with its list in the deny field: listed as stored, moved into the structure by an import', async () => {
    const stored = entries(COUNT);
    await place.use(async (source) => source.write('old', JSON.stringify({ version: 1, revision: 7, updatedAt: ADDED_AT, deny: stored })));
    const json = await sluice(['config', 'deny', 'list', '--json', ...place.flags('old')]);
    expect(json.code, json.stderr).toBe(0);
    // No structure yet: the document's list, in its order, as instances apply it.
    expect(ndjson(json.stdout)).toEqual(stored);
    expect(json.stderr).toMatch(new RegExp(`^the deny list of "old" holds ${COUNT} entries at .*\\(revision 7\\)\\n$`));
    const imported = await sluice(['config', 'deny', 'import', '-', ...place.flags('old')], {}, 'user:moved\n');
    expect(JSON.parse(imported.stdout)).toMatchObject({ added: 1, unchanged: 0, entries: COUNT + 1, written: true });
    expect(await held(place, 'old')).toEqual(byMatch([...stored, expect.objectContaining({ match: 'user:moved' })]));
    const document = JSON.parse((await place.use(async (source) => source.read('old')))!) as Record<string, unknown>;
    expect(document).not.toHaveProperty('deny');
    expect(document.revision).toBe(8);
  });
});
