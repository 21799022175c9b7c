/**
 * `sluice config deny import <file|->`: a feed of matches, one a line, applied to the deny list as the difference
 * from what it holds: only what differs is written.
 *
 * The file: one match a line, each accepted as `sluice config deny add` accepts it (deny-input.ts: an address or
 * block, an identity with a prefix, or with `--identity` any other identity); spaces around a line and a CR before
 * its LF are dropped, blank lines and lines starting with `#` are ignored, and a match given twice counts once. Every
 * line is checked before the store is touched: one refused line and the command exits 2, naming each refused line by
 * its number, with nothing written.
 *
 * What is written: an entry for every match of the file the list does not hold (with the shared `--for` and
 * `--reason`, added now), and, with `--replace`, no entry the file does not list. An entry the list already holds is
 * left as it is, its reason, end and addedAt kept, even when `--for` or `--reason` differ (remove it first to change
 * them). Expired entries are dropped on the way, as a write of the document's list drops them. Without `--replace`
 * nothing else is removed.
 *
 * How it is written depends on where the list is:
 * - in the source's own structure (`source.deny`): the structure is read whole, and the difference sent as changes
 *   of at most DENY_CHANGE_MAX entries (core's addDenyEntries and removeDenyEntries), additions first. The list has
 *   no bound of entries there. Each change is atomic, the import as a whole is not: another writer's change in
 *   between is kept (the import removes only entries it read, and a match both write ends as the later write left it).
 * - in the document's `deny` field (a source without a structure): one compare-and-set write of the next list,
 *   taken again from the new list when another writer got in between (up to MAX_ATTEMPTS times), refused past
 *   MAX_ENTRIES entries; entries that are not valid are dropped by that write, as by every writer of the document.
 * Exit codes: those of config-connection.ts (0, 1, 2).
 */
import { readFileSync } from 'node:fs';
import { SluiceError } from '@sluice/core';
import { parseLimiterConfig, readLimiterConfig, type ConfigSource, type DenyEntry, type LimiterConfig } from '@sluice/core/config';
import type { Command } from 'commander';
import { fail, messageOf, pickUp, run, withConnection } from './config-connection.js';
import { versionText } from './config-deny-list.js';
import { applyToStructure } from './deny-import-structure.js';
import { plan, type ImportFlags, type Plan } from './deny-import-plan.js';
import { checkMatch, denyUntil, skippedDenyEntries, skippedWarning } from './deny-input.js';
import { readStandardInput } from './standard-input.js';

/** A refused line: its number (from 1) and why. */
interface Refusal {
  line: number;
  problem: string;
}

/**
 * The bound of a list kept in the document's field (core's addDenyEntry default, maxEntries): a document every
 * watcher reads whole on each change stays a few MB. A list in a source's own structure has none.
 */
const MAX_ENTRIES = 100_000;
/** Importers that lose the compare and set read and diff again, this many times in all. */
const MAX_ATTEMPTS = 20;
/** Refused lines named one by one on stderr; the rest are counted. */
const SHOWN_REFUSALS = 20;

/** Adds `import` to `sluice config deny` (made by config-deny.ts). */
export function registerDenyImport(deny: Command): void {
  withConnection(
    deny
      .command('import')
      .description(
        "Apply a file of matches (one a line, # comments) as the difference: add what the list lacks, and with --replace remove what the file does not list (at most 100,000 entries where the list is the document's field; no bound where the store keeps it in a structure of its own)",
      )
      .argument('<file>', 'the file, or - for standard input'),
  )
    .option('--identity', 'a line without a prefix is an identity as the limiter sees it (an API key), as deny add --identity')
    .option('--for <duration>', 'entries added end after this long (30m, 7d; at most 3650d); default: until removed')
    .option('--reason <text>', 'the reason of every entry added (at most 200 characters)')
    .option('--replace', 'also remove every entry the file does not list (the file becomes the whole list)')
    .option('--dry-run', 'print what would change, write nothing')
    .action(async (file: string, flags: ImportFlags) => {
      const now = Date.now();
      let wanted: Map<string, DenyEntry>;
      try {
        wanted = await readFeed(await readInput(file), file, flags, now);
      } catch (error) {
        fail(error);
        return;
      }
      return run(flags, !flags.dryRun, async (connection) => {
        const { source } = connection;
        const done =
          source.deny === undefined
            ? await applyFeed(source, flags, wanted, now)
            : await applyToStructure(source, source.deny, { flags, wanted, now });
        const { plan } = done;
        const counts = { added: plan.added, removed: plan.removed, unchanged: plan.unchanged, expired: plan.expired };
        // Where the list is after the import: the structure's version, or the document's revision.
        const at = 'version' in done ? { version: done.version ?? null } : { revision: done.revision };
        process.stdout.write(`${JSON.stringify({ ...counts, entries: plan.deny.length, ...at, written: done.written })}\n`);
        const what = `added ${plan.added}, removed ${plan.removed}, unchanged ${plan.unchanged}${plan.expired > 0 ? `, expired and dropped ${plan.expired}` : ''}`;
        const where = `the deny list of ${JSON.stringify(flags.name)} at ${'version' in done ? connection.denyWhere : connection.where}`;
        const written =
          'version' in done
            ? `${done.version === undefined ? 'no structure stored' : versionText(done.version)} of ${where}`
            : `revision ${done.revision} of ${where}`;
        if (done.warning !== '') process.stderr.write(`sluice config deny import: ${done.warning}\n`);
        if (flags.dryRun === true) process.stderr.write(`dry run, nothing written: ${what}; ${where} would hold ${plan.deny.length}\n`);
        else if (!done.written)
          process.stderr.write(`nothing to change: ${what}; ${where} holds ${plan.deny.length}; nothing was written\n`);
        else process.stderr.write(`${what}: ${written} holds ${plan.deny.length}; ${pickUp(connection)}\n`);
      });
    });
}

/** The file's text, or standard input's for `-`. A file that cannot be read is the operator's to fix (exit 2). */
async function readInput(file: string): Promise<string> {
  if (file === '-') return readStandardInput();
  try {
    return readFileSync(file, 'utf8');
  } catch (error) {
    throw new SluiceError('INVALID_OPTION', `<file> ${JSON.stringify(file)} could not be read: ${messageOf(error)}`);
  }
}

/**
 * The entries the file asks for, by match, in the file's order; every line checked first. Any refused line throws
 * INVALID_OPTION naming the refused lines by number, so nothing is written.
 */
async function readFeed(text: string, file: string, flags: ImportFlags, now: number): Promise<Map<string, DenyEntry>> {
  const until = flags.for === undefined ? undefined : denyUntil(flags.for, now, '--for');
  if (flags.reason !== undefined) {
    const problem = (await checkEntries([{ match: 'user:reason', reason: flags.reason }])).get(0);
    if (problem !== undefined) throw new SluiceError('INVALID_OPTION', `--reason${problem.replace(/^\.reason:/, '')}`);
  }
  const wanted = new Map<string, DenyEntry>();
  const lineOf = new Map<string, number>();
  const refused: Refusal[] = [];
  const lines = text.split('\n');
  for (let i = 0; i < lines.length; i++) {
    // A byte order mark before the first line, a CR before LF and spaces around a match are not part of it.
    const match = (i === 0 ? lines[i]!.replace(/^\uFEFF/, '') : lines[i]!).trim();
    if (match === '' || match.startsWith('#') || wanted.has(match)) continue;
    try {
      checkMatch(match, { identity: flags.identity === true, field: `line ${i + 1}` });
    } catch (error) {
      refused.push({ line: i + 1, problem: messageOf(error) });
      continue;
    }
    wanted.set(match, {
      match,
      ...(until === undefined ? {} : { until }),
      ...(flags.reason === undefined ? {} : { reason: flags.reason }),
      addedAt: now,
    });
    lineOf.set(match, i + 1);
  }
  // What core checks of an entry (its length, no control characters), each refusal named by its line.
  const entries = [...wanted.values()];
  for (const [index, problem] of await checkEntries(entries)) {
    const line = lineOf.get(entries[index]!.match)!;
    refused.push({ line, problem: `line ${line}: ${problem.replace(/^\./, '')}` });
  }
  if (refused.length > 0) {
    refused.sort((a, b) => a.line - b.line);
    const shown = refused.slice(0, SHOWN_REFUSALS).map((refusal) => refusal.problem);
    const more = refused.length > SHOWN_REFUSALS ? `\n... and ${refused.length - SHOWN_REFUSALS} more refused lines` : '';
    const lines = refused.length === 1 ? `line ${refused[0]!.line}` : `${refused.length} lines`;
    throw new SluiceError(
      'INVALID_OPTION',
      `${shown.join('\n')}${more}\n${JSON.stringify(file)}: ${lines} refused, so nothing was written; fix or remove ${refused.length === 1 ? 'it' : 'them'} and import again`,
    );
  }
  return wanted;
}

/** Checks entries as core's writers will (a document holding them alone): what is wrong with each bad one, by index. */
async function checkEntries(entries: readonly DenyEntry[]): Promise<Map<number, string>> {
  const problems = new Map<number, string>();
  const probe: ConfigSource = { read: () => JSON.stringify({ version: 1, deny: entries }), write: () => {}, remove: () => {} };
  // readLimiterConfig on a source of its own: core's one check of an entry, reporting every bad one, not the first.
  await readLimiterConfig(probe, 'import', {
    onBadDenyEntry: (index, error) => void problems.set(index, error.detail.replace(/^deny\[\d+\]/, '')),
  });
  return problems;
}

/**
 * Reads the list, takes the difference and writes it over the revision read (compare and set), again from the new
 * list when another writer got in between. Writes nothing when nothing differs, or on a dry run.
 */
async function applyFeed(
  source: ConfigSource,
  flags: ImportFlags,
  wanted: ReadonlyMap<string, DenyEntry>,
  now: number,
): Promise<{ plan: Plan; revision: number | undefined; written: boolean; warning: string }> {
  for (let attempt = 1; ; attempt++) {
    const skipped = skippedDenyEntries();
    const current = await readLimiterConfig(source, flags.name, { onBadDenyEntry: skipped.onBadDenyEntry });
    const live = current?.deleted === true ? [] : (current?.deny ?? []);
    const next = plan(live, wanted, flags.replace === true, now);
    const warning = skippedWarning(skipped.entries, flags.name);
    const revision = current?.revision;
    if (flags.dryRun === true || (next.added === 0 && next.removed === 0 && next.expired === 0 && skipped.entries.length === 0)) {
      return { plan: next, revision, written: false, warning };
    }
    if (next.deny.length > MAX_ENTRIES) {
      throw new SluiceError(
        'INVALID_OPTION',
        `the deny list of ${JSON.stringify(flags.name)} would hold ${next.deny.length} entries, more than ${MAX_ENTRIES}; nothing was written: import with --replace, or block whole ranges with CIDR entries`,
      );
    }
    const document = nextDocument(current, next.deny, now);
    const text = JSON.stringify(document);
    if (source.replace === undefined) {
      await source.write(flags.name, text);
      return { plan: next, revision: document.revision, written: true, warning };
    }
    if (await source.replace(flags.name, revision ?? 0, text)) return { plan: next, revision: document.revision, written: true, warning };
    if (attempt === MAX_ATTEMPTS) {
      throw new SluiceError(
        'STORE_ERROR',
        `the configuration of ${JSON.stringify(flags.name)} changed under this import ${MAX_ATTEMPTS} times in a row (other writers); nothing was written, try again`,
      );
    }
    // Another writer got in between: take the difference again from what it wrote, after a jittered pause.
    await new Promise<void>((resolve) => setTimeout(resolve, Math.random() * Math.min(50, 2 ** attempt)));
  }
}

/** The next revision of the document with `deny` as its list, checked as instances will check it. */
function nextDocument(current: LimiterConfig | undefined, deny: readonly DenyEntry[], now: number): LimiterConfig {
  // A write over a tombstone starts a document again, from the tombstone's revision (as core's writers do).
  const { deleted: _deleted, deny: _deny, ...kept } = current ?? {};
  return parseLimiterConfig({
    ...kept,
    version: 1,
    revision: (current?.revision ?? 0) + 1,
    updatedAt: now,
    ...(deny.length === 0 ? {} : { deny }),
  });
}
