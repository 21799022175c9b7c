/**
 * What every store's deny list structure (core's DenyListSource, `configSource.deny`) must do, as checks that take a
 * source and throw when it falls short. describe-deny-source-conformance.ts registers each as a vitest test; the
 * suite's own tests run them against sources with one defect each, and require each defect to be caught.
 */
import {
  DENY_LOG_LENGTH,
  changeText,
  entryText,
  readChangeText,
  stampChangeText,
  type DenyEntry,
  type DenyListChange,
  type DenyListSource,
  type DenyListVersion,
} from '@sluice/core/config';
import { expect } from 'vitest';

/** What a check is given: a source, a list name no other check uses, and the adopter's hooks. */
export interface DenyCheckContext {
  readonly source: DenyListSource;
  /** Another source on the same store (another client, another connection), made on first use. */
  readonly other: () => Promise<DenyListSource>;
  readonly name: string;
  /** Drops list `name` from the store directly, as a store restarted empty would. */
  readonly lose: (name: string) => Promise<void>;
}

export interface DenyCheck {
  readonly title: string;
  /** Only for sources that push changes (true), or only for those that do not (false). */
  readonly push?: boolean;
  /** Only for sources whose `change` answers `removed` (true), or only for those whose does not (false). */
  readonly countsRemoved?: boolean;
  readonly run: (context: DenyCheckContext) => Promise<void>;
}

const entry = (match: string, reason?: string): DenyEntry => (reason === undefined ? { match } : { match, reason });
/** Where a change left the list, without what else `change` answered (`removed`). */
const versionOf = ({ epoch, version }: DenyListVersion): DenyListVersion => ({ epoch, version });

/** Every entry text of list `name`, a page of about `count` at a time, and each page's version. */
export async function readWhole(
  source: DenyListSource,
  name: string,
  count = 100,
): Promise<{ entries: string[]; pages: number; versions: Array<DenyListVersion | undefined> }> {
  const entries: string[] = [];
  const versions: Array<DenyListVersion | undefined> = [];
  let cursor = '0';
  do {
    const page = await source.readPage(name, cursor, count);
    entries.push(...page.entries);
    versions.push(page.version);
    if (page.cursor !== '0' && page.cursor === cursor)
      throw new Error(`readPage answered the cursor it was given, ${JSON.stringify(cursor)}`);
    cursor = page.cursor;
    // The largest list read here has 5,000 entries: more pages than that is a read that does not end.
    if (versions.length > 10_000) throw new Error(`readPage never answered cursor '0' (last cursor ${JSON.stringify(cursor)})`);
  } while (cursor !== '0');
  return { entries, pages: versions.length, versions };
}

/** Applies `changes` at most `parallel` at a time; answers the version each made, in the order given. */
async function applyAll(
  source: DenyListSource,
  name: string,
  changes: readonly DenyListChange[],
  parallel = 50,
): Promise<DenyListVersion[]> {
  const versions: DenyListVersion[] = [];
  for (let i = 0; i < changes.length; i += parallel) {
    const made = await Promise.all(changes.slice(i, i + parallel).map((change) => source.change(name, change)));
    versions.push(...made.map(versionOf));
  }
  return versions;
}

/** The log texts a store must hold for `changes`, which made `versions`, ordered by version. */
function expectedTexts(changes: readonly DenyListChange[], versions: readonly DenyListVersion[]): string[] {
  return changes
    .map((change, i) => ({ version: versions[i]!, text: stampChangeText(changeText(change), versions[i]!) }))
    .sort((a, b) => a.version.version - b.version.version)
    .map((made) => made.text);
}

async function until(check: () => boolean, what: string, timeoutMs = 5_000): Promise<void> {
  const started = Date.now();
  while (!check()) {
    if (Date.now() - started > timeoutMs) throw new Error(`${what}: not within ${timeoutMs} ms`);
    await new Promise((resolve) => setTimeout(resolve, 2));
  }
}

/** Matches and reasons a store must keep byte for byte: quotes, backslashes, JSON-looking text, every plane. */
const AWKWARD = [
  entry('"quoted" \\back\\slash\\', 'a reason with "quotes", \\ and a newline\n'),
  entry('ünïcödé 中文 🙂 \u2028\u2029', 'emoji 🚫 and 𝒮 outside the BMP'),
  entry('{"looks":"like json"}', '[1,2,3]'),
  entry("it's ~0 'single' \t tab", '~ a reply mark at the start'),
  { match: '203.0.113.0/24', until: 1_767_229_200_000, reason: 'range', addedAt: 1_767_225_600_000 },
];

export const DENY_CHECKS: readonly DenyCheck[] = [
  {
    title: 'expireBefore drops ended entries after the change, a hundred at most, as the next version of their own',
    async run({ source, name }) {
      const ending = Array.from({ length: 150 }, (_, i) => ({ match: `user:${i}`, until: 1_000 + i }));
      const kept = [entry('user:forever'), { match: 'user:later', until: 5_000 }];
      // An entry given an end and then none does not end; one re-added with a later end ends then.
      const first = await source.change(name, { add: [...ending, ...kept, { match: 'user:reset', until: 1_000 }] });
      await source.change(name, { add: [entry('user:reset'), { match: 'user:0', until: 9_000 }] });
      const made = await source.change(name, { add: [entry('user:new')], expireBefore: 1_120 });
      // Ended at or before 1,120: user:1 to user:120 (user:0 now ends at 9,000), 100 of them dropped now.
      expect(made.version).toBe(first.version + 3);
      const texts = (await source.readChanges(name, first)).changes!;
      expect(texts).toHaveLength(3);
      const dropped = readChangeText(texts[2])!;
      expect(dropped).toMatchObject({ epoch: first.epoch, version: made.version, clear: false, add: [] });
      expect(dropped.remove).toHaveLength(100);
      for (const match of dropped.remove) expect(Number(String(match).slice(5))).toBeLessThanOrEqual(120);
      const next = await source.change(name, { expireBefore: 1_120 });
      const rest = readChangeText((await source.readChanges(name, made)).changes![1])!;
      expect(next.version).toBe(made.version + 2);
      expect(rest.remove).toHaveLength(20);
      const left = (await readWhole(source, name)).entries.map((text) => (JSON.parse(text) as DenyEntry).match).sort();
      const expected = ['user:forever', 'user:later', 'user:reset', 'user:new', 'user:0'];
      for (let i = 121; i < 150; i++) expected.push(`user:${i}`);
      expect(left).toEqual(expected.sort());
      // Nothing ended: no change of its own.
      const quiet = await source.change(name, { expireBefore: 1_120 });
      expect(quiet.version).toBe(next.version + 1);
    },
  },
  {
    title: 'no list stored: no version, no changes and one empty last page',
    async run({ source, name }) {
      expect(await source.readChanges(name, undefined)).toEqual({ version: undefined, changes: undefined });
      expect(await source.readPage(name, '0', 100)).toEqual({ entries: [], cursor: '0', version: undefined });
    },
  },
  {
    title: 'the first change creates the list: a fresh epoch, version 1, its stamped text the log',
    async run({ source, name }) {
      const change = { add: [entry('user:1', 'first')] };
      const made = versionOf(await source.change(name, change));
      expect(typeof made.epoch).toBe('string');
      expect(made.epoch.length).toBeGreaterThan(0);
      expect(made.version).toBe(1);
      expect(JSON.parse(JSON.stringify(made.epoch))).toBe(made.epoch);
      expect(await source.readChanges(name, undefined)).toEqual({ version: made, changes: undefined });
      const text = stampChangeText(changeText(change), made);
      expect(await source.readChanges(name, { epoch: made.epoch, version: 0 })).toEqual({ version: made, changes: [text] });
      expect(readChangeText(text)).toMatchObject({ epoch: made.epoch, version: 1, add: [{ match: 'user:1' }] });
      expect(await readWhole(source, name)).toEqual({ entries: [entryText(change.add[0]!)], pages: 1, versions: [made] });
    },
  },
  {
    title: 'an empty change still counts: version + 1, its text the bare stamp',
    async run({ source, name }) {
      const first = await source.change(name, {});
      const second = await source.change(name, { clear: false, remove: [], add: [] });
      expect(versionOf(second)).toEqual({ epoch: first.epoch, version: 2 });
      expect((await source.readChanges(name, first)).changes).toEqual([`{"epoch":${JSON.stringify(first.epoch)},"version":2}`]);
    },
  },
  {
    title: 'a change applies clear, then remove, then add, in one step',
    async run({ source, name }) {
      await source.change(name, { add: ['a', 'b', 'c', 'd'].map((m) => entry(m, 'old')) });
      await source.change(name, { remove: ['a', 'missing'], add: [entry('a', 'new'), entry('e')] });
      expect(new Set((await readWhole(source, name)).entries)).toEqual(
        new Set([entry('a', 'new'), entry('b', 'old'), entry('c', 'old'), entry('d', 'old'), entry('e')].map(entryText)),
      );
      const made = await source.change(name, { clear: true, remove: ['f'], add: [entry('b', 'kept'), entry('f')] });
      expect(made.version).toBe(3);
      expect(new Set((await readWhole(source, name)).entries)).toEqual(new Set([entry('b', 'kept'), entry('f')].map(entryText)));
      await source.change(name, { clear: true });
      expect((await readWhole(source, name)).entries).toEqual([]);
    },
  },
  {
    title: 'each change adds one to the version; readChanges answers the texts after a version, oldest first',
    async run({ source, name }) {
      const changes: DenyListChange[] = Array.from({ length: 6 }, (_, i) =>
        i % 3 === 2 ? { remove: [`user:${i - 1}`] } : { add: [entry(`user:${i}`, `reason ${i}`)] },
      );
      const versions = await applyAll(source, name, changes, 1);
      expect(versions.map((v) => v.version)).toEqual([1, 2, 3, 4, 5, 6]);
      expect(new Set(versions.map((v) => v.epoch)).size).toBe(1);
      const texts = expectedTexts(changes, versions);
      const at = versions.at(-1)!;
      for (const since of [0, 1, 4, 6]) {
        expect(await source.readChanges(name, { epoch: at.epoch, version: since })).toEqual({ version: at, changes: texts.slice(since) });
      }
    },
  },
  {
    title: 'readChanges answers no changes for another epoch, a version ahead of the list, or no version at all',
    async run({ source, name }) {
      await source.change(name, { add: [entry('x')] });
      const at = versionOf(await source.change(name, { add: [entry('y')] }));
      const whole = { version: at, changes: undefined };
      expect(await source.readChanges(name, { epoch: `${at.epoch}x`, version: 1 })).toEqual(whole);
      expect(await source.readChanges(name, { epoch: 'another', version: 0 })).toEqual(whole);
      expect(await source.readChanges(name, { epoch: at.epoch, version: 3 })).toEqual(whole);
      expect(await source.readChanges(name, undefined)).toEqual(whole);
    },
  },
  {
    title: `the log keeps the last ${DENY_LOG_LENGTH} changes: after 1,100, from version 10 read whole, from 1,050 the 50 texts`,
    async run({ source, name }) {
      const changes: DenyListChange[] = Array.from({ length: 1_100 }, (_, i) => ({ add: [entry(`user:${i}`)] }));
      const versions = await applyAll(source, name, changes);
      expect(versions.map((v) => v.version).sort((a, b) => a - b)).toEqual(Array.from({ length: 1_100 }, (_, i) => i + 1));
      const at = { epoch: versions[0]!.epoch, version: 1_100 };
      const texts = expectedTexts(changes, versions);
      expect(await source.readChanges(name, { epoch: at.epoch, version: 10 })).toEqual({ version: at, changes: undefined });
      expect(await source.readChanges(name, { epoch: at.epoch, version: 1_050 })).toEqual({ version: at, changes: texts.slice(1_050) });
      const oldest = 1_100 - DENY_LOG_LENGTH;
      expect(await source.readChanges(name, { epoch: at.epoch, version: oldest })).toEqual({ version: at, changes: texts.slice(oldest) });
      expect((await source.readChanges(name, { epoch: at.epoch, version: oldest - 1 })).changes).toBeUndefined();
    },
  },
  {
    title: 'readPage over 5,000 entries gives each exactly once, in pages of about the count asked, each at the version',
    async run({ source, name }) {
      const all = Array.from({ length: 5_000 }, (_, i) => entry(`user:${i}`, i % 2 === 0 ? 'even' : undefined));
      const changes = Array.from({ length: 5 }, (_, i) => ({ add: all.slice(i * 1_000, (i + 1) * 1_000) }));
      const at = (await applyAll(source, name, changes, 1)).at(-1)!;
      const read = await readWhole(source, name, 100);
      expect(read.entries).toHaveLength(5_000);
      expect(new Set(read.entries)).toEqual(new Set(all.map(entryText)));
      // About 100 a page: never the whole list in one, nor a page per entry.
      expect(read.pages).toBeGreaterThanOrEqual(10);
      expect(read.pages).toBeLessThanOrEqual(500);
      expect(new Set(read.versions.map((v) => JSON.stringify(v)))).toEqual(new Set([JSON.stringify(at)]));
    },
  },
  {
    title: 'a list the store lost reads as none, and the next change starts a new epoch at version 1 with only its entries',
    async run({ source, name, lose }) {
      const old = versionOf(await source.change(name, { add: [entry('old:1'), entry('old:2')] }));
      await lose(name);
      expect(await source.readChanges(name, old)).toEqual({ version: undefined, changes: undefined });
      expect(await source.readPage(name, '0', 100)).toEqual({ entries: [], cursor: '0', version: undefined });
      const change = { add: [entry('new:1')] };
      const made = versionOf(await source.change(name, change));
      expect(made.version).toBe(1);
      expect(made.epoch).not.toBe(old.epoch);
      expect((await readWhole(source, name)).entries).toEqual([entryText(change.add[0]!)]);
      expect(await source.readChanges(name, old)).toEqual({ version: made, changes: undefined });
      expect(await source.readChanges(name, { epoch: made.epoch, version: 0 })).toEqual({
        version: made,
        changes: [stampChangeText(changeText(change), made)],
      });
    },
  },
  {
    title: 'matches and reasons with quotes, backslashes and any Unicode come back byte for byte, in pages and in change texts',
    async run({ source, name }) {
      const change = { add: AWKWARD };
      const made = await source.change(name, change);
      expect(new Set((await readWhole(source, name)).entries)).toEqual(new Set(AWKWARD.map(entryText)));
      const removal = { remove: [AWKWARD[0]!.match, AWKWARD[1]!.match] };
      const after = await source.change(name, removal);
      expect(new Set((await readWhole(source, name)).entries)).toEqual(new Set(AWKWARD.slice(2).map(entryText)));
      expect((await source.readChanges(name, { epoch: made.epoch, version: 0 })).changes).toEqual([
        stampChangeText(changeText(change), made),
        stampChangeText(changeText(removal), after),
      ]);
    },
  },
  {
    title: 'changes from two sources at once each get a version of their own, and the log holds them in version order',
    async run({ source, other, name }) {
      const second = await other();
      const changes: DenyListChange[] = Array.from({ length: 40 }, (_, i) => ({ add: [entry(`user:${i}`, `from ${i % 2}`)] }));
      const versions = await Promise.all(changes.map((change, i) => (i % 2 === 0 ? source : second).change(name, change)));
      expect(versions.map((v) => v.version).sort((a, b) => a - b)).toEqual(Array.from({ length: 40 }, (_, i) => i + 1));
      expect(new Set(versions.map((v) => v.epoch)).size).toBe(1);
      const at = { epoch: versions[0]!.epoch, version: 40 };
      expect(await second.readChanges(name, { epoch: at.epoch, version: 0 })).toEqual({
        version: at,
        changes: expectedTexts(changes, versions),
      });
      expect((await readWhole(source, name)).entries).toHaveLength(40);
    },
  },
  {
    title: 'change answers how many of the matches to remove were held, counted after the clear',
    countsRemoved: true,
    async run({ source, name }) {
      expect((await source.change(name, { add: ['a', 'b', 'c', 'd'].map((m) => entry(m)) })).removed).toBe(0);
      expect((await source.change(name, { remove: ['a', 'missing', 'b', 'a'], add: [entry('b')] })).removed).toBe(2);
      expect((await source.change(name, { clear: true, remove: ['c', 'd'] })).removed).toBe(0);
      expect((await source.change(name, { add: [entry('e')], remove: ['e'] })).removed).toBe(0);
    },
  },
  {
    title: 'a source that does not count what it removed answers no removed',
    countsRemoved: false,
    async run({ source, name }) {
      await source.change(name, { add: [entry('a')] });
      expect((await source.change(name, { remove: ['a'] })).removed).toBeUndefined();
    },
  },
  {
    title: 'subscribe delivers each change as its stamped text; a listener unsubscribed hears no more',
    push: true,
    async run({ source, name }) {
      expect(typeof source.subscribe).toBe('function');
      const heard: string[] = [];
      const stays: string[] = [];
      const stop = await source.subscribe!(name, (text) => void heard.push(text));
      const stopStays = await source.subscribe!(name, (text) => void stays.push(text));
      const otherList: string[] = [];
      const stopOther = await source.subscribe!(`${name}-other`, (text) => void otherList.push(text));
      try {
        const change = { remove: ['a'], add: [entry('b', 'pushed')] };
        const made = await source.change(name, change);
        await until(() => heard.length > 0 && stays.length > 0, 'the change pushed to both listeners');
        expect(heard).toEqual([stampChangeText(changeText(change), made)]);
        await stop();
        const next = { clear: true };
        const made2 = await source.change(name, next);
        // Pushes arrive in order, so once the listener that stays has this one, the one that left would have too.
        await until(() => stays.length === 2, 'the second change pushed');
        expect(stays).toEqual([stampChangeText(changeText(change), made), stampChangeText(changeText(next), made2)]);
        expect(heard).toHaveLength(1);
        expect(otherList).toEqual([]);
      } finally {
        await stopStays();
        await stopOther();
      }
    },
  },
  {
    title: 'a source that cannot push has no subscribe (its watchers read the changes periodically)',
    push: false,
    async run({ source }) {
      expect(source.subscribe).toBeUndefined();
    },
  },
];
