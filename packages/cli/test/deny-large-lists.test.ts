/**
 * The deny list's operator tools for large lists, the built binary run as a process against a real redis-server and
 * a real SQLite file: `sluice config deny list` in pages (`--limit`, `--offset`) and as one JSON entry per line
 * (`--json`), each entry printed exactly once across pages and streams longer than one output chunk; and
 * `sluice config deny import`, which applies a file of matches as one write of only the difference (an entry already
 * listed keeps its reason and addedAt), removes what the file does not list only with `--replace`, reads comments,
 * blank lines, CRLF and standard input, and refuses a file with a bad line by its number, writing nothing.
 */
import { spawn } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import Database from 'better-sqlite3';
import { describe, expect, test } from 'vitest';
import type { DenyEntry } from '@sluice/core/config';
import { sqliteConfigSource } from '@sluice/sqlite';
import { ndjson, sluice, useStores } from './run-cli.js';

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

/** Where a document is written directly, and the flags the CLI reaches it with. */
interface Place {
  label: string;
  write: (name: string, document: object) => Promise<void>;
  read: (name: string) => Promise<string | undefined>;
  flags: (name: string) => string[];
}

const places: Place[] = [
  {
    label: 'Redis',
    write: async (name, document) => void (await stores.redis.set(`sluice:config:${name}`, JSON.stringify(document))),
    read: async (name) => (await stores.redis.get(`sluice:config:${name}`)) ?? undefined,
    flags: (name) => ['--name', name, '--redis', `redis://127.0.0.1:${stores.server.port}`],
  },
  {
    label: 'SQLite',
    write: async (name, document) => withSqlite(async (db) => void (await sqliteConfigSource(db).write(name, JSON.stringify(document)))),
    read: async (name) => withSqlite(async (db) => (await sqliteConfigSource(db).read(name)) ?? undefined),
    flags: (name) => ['--name', name, '--sqlite', join(stores.folder, 'fleet.db')],
  },
];

async function withSqlite<T>(use: (db: Database.Database) => T | Promise<T>): Promise<T> {
  const db = new Database(join(stores.folder, 'fleet.db'));
  try {
    return await use(db);
  } finally {
    db.close();
  }
}

function document(deny: readonly DenyEntry[], revision = 7): object {
  return { version: 1, revision, updatedAt: ADDED_AT, deny };
}

describe.each(places)('a large deny list in $label', (place) => {
  test('list --limit and --offset page through every entry exactly once, in stored order, as a table and as NDJSON', async () => {
    const stored = entries(COUNT);
    await place.write('paged', document(stored));
    for (const json of [false, true]) {
      const seen: string[] = [];
      let offset = 0;
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
        expect(page.stderr).toContain(`holds ${COUNT} entries`);
        const next = /the next page: --offset (\d+)/.exec(page.stderr);
        if (next === null) break;
        offset = Number(next[1]);
      }
      expect(seen).toEqual(stored.map((entry) => entry.match));
    }
  });

  test('list --json prints every entry as stored, one JSON object a line; the table has every match once', async () => {
    const stored = entries(COUNT);
    await place.write('streamed', document(stored));
    const json = await sluice(['config', 'deny', 'list', '--json', ...place.flags('streamed')]);
    expect(json.code, json.stderr).toBe(0);
    expect(json.stdout.split('\n')).toHaveLength(COUNT + 1);
    expect(ndjson(json.stdout)).toEqual(stored);
    const table = await sluice(['config', 'deny', 'list', ...place.flags('streamed')]);
    const rows = table.stdout.trimEnd().split('\n');
    expect(rows[0]).toMatch(/^MATCH +KIND +UNTIL +REASON$/);
    expect(rows.slice(1).map((line) => line.split(/ {2,}/)[0])).toEqual(stored.map((entry) => entry.match));
  });

  test('list --json read by a reader that stops after its first chunk (| head): exit 0, no error', async () => {
    await place.write('headed', document(entries(COUNT)));
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
    expect(JSON.parse(first.split('\n')[0]!)).toEqual(entries(1)[0]);
    expect([code, stderr]).toEqual([0, expect.stringMatching(/^the deny list of "headed" holds 2345 entries/)]);
  });

  test('list --offset past the end prints nothing and says so; a bad --limit or --offset exits 2 naming it', async () => {
    await place.write('short', document(entries(3)));
    const past = await sluice(['config', 'deny', 'list', '--offset', '3', ...place.flags('short')]);
    expect([past.code, past.stdout]).toEqual([0, '']);
    expect(past.stderr).toContain('printed none (--offset 3 is past the end)');
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

  test('import adds only what the list lacks in one write: a listed entry keeps its reason and addedAt; comments, blank lines, CRLF', async () => {
    const stored = entries(COUNT);
    await place.write('fed', document(stored, 7));
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
    expect(JSON.parse(imported.stdout)).toEqual({
      added: 3,
      removed: 0,
      unchanged: 2_000,
      expired: 0,
      entries: COUNT + 3,
      revision: 8,
      written: true,
    });
    expect(imported.stderr).toMatch(/^added 3, removed 0, unchanged 2000: revision 8 of the deny list of "fed"/);
    const after = JSON.parse((await place.read('fed'))!) as { revision: number; deny: DenyEntry[] };
    expect(after.revision).toBe(8);
    // Every entry that was listed is as it was, in its place; the new ones follow, with the shared reason and end.
    expect(after.deny.slice(0, COUNT)).toEqual(stored);
    expect(after.deny.slice(COUNT).map((entry) => [entry.match, entry.reason])).toEqual([
      ['203.0.113.7', 'feed'],
      ['user:new', 'feed'],
      ['2001:db8:ffff::/48', 'feed'],
    ]);
    const added = after.deny[COUNT]!;
    expect(added.until! - added.addedAt!).toBe(3_600_000);
    expect(added.addedAt).toBeGreaterThan(ADDED_AT);

    // The same feed again: nothing differs, nothing is written.
    const again = await sluice(['config', 'deny', 'import', file, ...place.flags('fed')]);
    expect([again.code, JSON.parse(again.stdout)]).toEqual([0, expect.objectContaining({ added: 0, unchanged: 2_003, written: false })]);
    expect(again.stderr).toMatch(/^nothing to change: added 0, removed 0, unchanged 2003/);
    expect(JSON.parse((await place.read('fed'))!).revision).toBe(8);
  });

  test('import --replace removes every entry the file does not list, keeping the ones it lists as they were', async () => {
    const stored = entries(30);
    await place.write('replaced', document(stored, 3));
    const input = ['user:2', stored[0]!.match, 'user:fresh', ''].join('\n');
    const replaced = await sluice(['config', 'deny', 'import', '-', '--replace', ...place.flags('replaced')], {}, input);
    expect(replaced.code, replaced.stderr).toBe(0);
    expect(JSON.parse(replaced.stdout)).toMatchObject({ added: 1, removed: 28, unchanged: 2, entries: 3, revision: 4 });
    const after = JSON.parse((await place.read('replaced'))!) as { deny: DenyEntry[] };
    expect(after.deny.slice(0, 2)).toEqual([stored[0], stored[2]]);
    expect(after.deny[2]).toMatchObject({ match: 'user:fresh' });
  });

  test('import refuses a file with a bad line: exit 2, each bad line named by its number, nothing written', async () => {
    await place.write('refused', document(entries(5), 4));
    const before = await place.read('refused');
    const input = ['# comment', 'user:ok', '10.9.8.7/24', '', 'sk_live_abc', `user:${'x'.repeat(300)}`, '203.0.113.9'].join('\r\n');
    const refused = await sluice(['config', 'deny', 'import', '-', ...place.flags('refused')], {}, input);
    expect([refused.code, refused.stdout]).toEqual([2, '']);
    expect(refused.stderr).toContain('line 3 "10.9.8.7/24" has bits set past its /24 prefix');
    expect(refused.stderr).toContain('line 5 "sk_live_abc" is neither an address or block nor an identity with a prefix');
    expect(refused.stderr).toContain('line 6: match: must be an identity or an IP range');
    expect(refused.stderr).toContain('"-": 3 lines refused, so nothing was written');
    expect(refused.stderr).not.toMatch(/line [1247]\b/);
    expect(await place.read('refused')).toBe(before);

    // --identity reads an unprefixed line as an identity, as deny add --identity does.
    const identity = await sluice(['config', 'deny', 'import', '-', '--identity', ...place.flags('refused')], {}, 'sk_live_abc\n');
    expect([identity.code, JSON.parse(identity.stdout)]).toEqual([0, expect.objectContaining({ added: 1, revision: 5 })]);
  });
});
