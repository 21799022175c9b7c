/**
 * `sluice config deny`: the deny list in a limiter's runtime configuration (core's deny-entries.ts). Every
 * instance running `watchConfig` picks a change up, and @sluice/http answers a listed identity or address 403
 * before any limiter decides. Writes go through core's addDenyEntry and removeDenyEntry (compare and set, so two
 * operators at once both land).
 *
 * What `add` accepts is deny-input.ts's: an address or block that parses, an identity with a prefix (`user:42`), or
 * another identity with `--identity`; anything else is refused (exit 2) before anything is stored. `list` and
 * `remove` read the list as instances do: an entry that is not valid (written by hand, or by another version) is
 * left out with one warning, and `remove` removes it by its match. `list` prints a page with `--limit` and `--offset`
 * (entries in stored order; the summary names the revision, so a script paging through can see the list changed
 * under it), as a table or one JSON entry per line (`--json`), written in chunks as stdout drains, never as one string.
 * `import` (config-deny-import.ts) applies a file of matches as one write.
 * Exit codes: those of config-connection.ts (0, 1, 2), and 3 when `remove` finds no entry with that match.
 */
import { once } from 'node:events';
import { SluiceError } from '@sluice/core';
import { addDenyEntry, readLimiterConfig, removeDenyEntry, type DenyEntry } from '@sluice/core/config';
import type { Command } from 'commander';
import { isoTime } from '../format.js';
import { fail, pickUp, run, withConnection, type Connection, type ConnectionFlags } from './config-connection.js';
import { registerDenyImport } from './config-deny-import.js';
import { checkMatch, denyKind, denyUntil, skippedDenyEntries, skippedWarning, type DenyKind } from './deny-input.js';

/** Exit code of `remove` when no entry has that match: nothing failed, but nothing was removed either. */
const NOT_FOUND = 3;

export function registerDeny(config: Command): void {
  const deny = config
    .command('deny')
    .description('Add, remove and list identities and IP ranges every instance refuses outright (403, by @sluice/http)');

  withConnection(
    deny
      .command('add')
      .description('Deny an identity (exactly) or an IP address or CIDR block; an entry with the same match is replaced')
      .argument('<match>', 'an address or block (203.0.113.0/24, 2001:db8::/56), or an identity with a prefix (user:42)'),
  )
    .option('--identity', 'the match is an identity as the limiter sees it, without a prefix (an API key)')
    .option(
      '--for <duration>',
      'a temporary block: it ends after this long (30m, 1h30m, 7d, or whole ms; at most 3650d); default: until removed',
    )
    .option('--reason <text>', 'why, for operators and the 403 body (at most 200 characters)')
    .action((match: string, flags: ConnectionFlags & { identity?: boolean; for?: string; reason?: string }) => {
      let kind: DenyKind;
      // Everything is checked before connecting: a bad match or duration exits 2 with nothing written.
      const now = Date.now();
      let until: number | undefined;
      try {
        kind = checkMatch(match, { identity: flags.identity === true });
        until = flags.for === undefined ? undefined : denyUntil(flags.for, now, '--for');
      } catch (error) {
        fail(error);
        return;
      }
      return run(flags, true, async (connection) => {
        const entry: DenyEntry = {
          match,
          ...(until === undefined ? {} : { until }),
          ...(flags.reason === undefined ? {} : { reason: flags.reason }),
        };
        const written = await addDenyEntry(connection.source, flags.name, entry, { now });
        const stored = written.deny?.find((kept) => kept.match === match);
        process.stdout.write(`${JSON.stringify(stored, null, 2)}\n`);
        const ends = stored?.until === undefined ? 'until removed' : `until ${isoTime(stored.until)}`;
        process.stderr.write(
          `denied ${JSON.stringify(match)} (${kind}) ${ends}: revision ${written.revision} of ${JSON.stringify(flags.name)} holds ${count(written.deny?.length ?? 0)} at ${connection.where}; ${pickUp(connection)}\n`,
        );
      });
    });

  withConnection(
    deny
      .command('remove')
      .description('Remove the entry with this match (as it was added); exit 3 when there is none')
      .argument('<match>', "the entry's match, exactly as listed"),
  ).action((match: string, flags: ConnectionFlags) =>
    // Any text is accepted: an entry the HTTP layer cannot read must be removable too.
    run(flags, true, async (connection) => {
      if (await removeDenyEntry(connection.source, flags.name, match)) {
        process.stderr.write(
          `removed ${JSON.stringify(match)} from the deny list of ${JSON.stringify(flags.name)}; ${pickUp(connection)}\n`,
        );
        return;
      }
      process.stderr.write(
        `no entry of the deny list of ${JSON.stringify(flags.name)} matches ${JSON.stringify(match)} exactly (sluice config deny list shows them); nothing was written\n`,
      );
      process.exitCode = NOT_FOUND;
    }),
  );

  withConnection(
    deny
      .command('list')
      .description(
        'Print the deny list, in stored order: match, kind (ident, IPv4, IPv6), until, reason; a page of it with --limit and --offset',
      ),
  )
    .option('--json', 'print one entry per line as JSON (NDJSON: match, until, reason, addedAt as stored)')
    .option('--limit <n>', 'print at most this many entries (a page); default: all')
    .option('--offset <n>', 'skip this many entries first (the next page starts at offset + limit)', '0')
    .action((flags: ConnectionFlags & { json?: boolean; limit?: string; offset: string }) => {
      let page: { offset: number; limit: number };
      try {
        page = {
          offset: countOption(flags.offset, '--offset', 0),
          limit: flags.limit === undefined ? Number.POSITIVE_INFINITY : countOption(flags.limit, '--limit', 1),
        };
      } catch (error) {
        fail(error);
        return;
      }
      return run(flags, false, async (connection) => {
        const skipped = skippedDenyEntries();
        const read = await readLimiterConfig(connection.source, flags.name, { onBadDenyEntry: skipped.onBadDenyEntry });
        const entries = read?.deny ?? [];
        const warning = skippedWarning(skipped.entries, flags.name);
        if (warning !== '') process.stderr.write(`sluice config deny list: ${warning}\n`);
        const shown = entries.slice(page.offset, page.offset + page.limit);
        const lines = flags.json === true ? jsonLines(shown) : denyTableLines(shown, Date.now());
        await writeLines(lines);
        process.stderr.write(summary(entries, flags.name, connection, { ...page, shown: shown.length, revision: read?.revision }));
      });
    });

  registerDenyImport(deny);
}

/** A whole number from `min` up, given as digits, for `--limit` and `--offset`. */
function countOption(value: string, field: string, min: number): number {
  const n = /^\d+$/.test(value) ? Number(value) : Number.NaN;
  if (!Number.isSafeInteger(n) || n < min) {
    throw new SluiceError('INVALID_OPTION', `${field} must be a whole number of entries from ${min}, got ${JSON.stringify(value)}`);
  }
  return n;
}

/** Lines written to stdout in chunks of this many, each chunk waiting for the one before to drain. */
const LINES_PER_CHUNK = 1_000;

/**
 * Writes `lines` to stdout a chunk at a time, waiting for a full pipe to drain, so a list of 100,000 entries is never
 * one string of megabytes; a reader that goes away (`| head`) ends the output quietly.
 */
async function writeLines(lines: Iterable<string>): Promise<void> {
  let closed = false;
  let failure: Error | undefined;
  const onError = (error: NodeJS.ErrnoException) => {
    closed = true;
    if (error.code !== 'EPIPE') failure = new SluiceError('STORE_ERROR', `could not write the list to stdout: ${error.message}`);
  };
  process.stdout.on('error', onError);
  let chunk: string[] = [];
  const flush = async () => {
    const text = `${chunk.join('\n')}\n`;
    chunk = [];
    // A write error ends the wait too ('error' rejects once()); the handler above has said what it was.
    if (!process.stdout.write(text)) await once(process.stdout, 'drain').catch(() => {});
  };
  // Left listening: the last chunk may fail after this returns, and an 'error' no one hears would crash the process.
  for (const line of lines) {
    if (closed) break;
    chunk.push(line);
    if (chunk.length === LINES_PER_CHUNK) await flush();
  }
  if (chunk.length > 0 && !closed) await flush();
  if (failure !== undefined) throw failure;
}

/** One JSON entry per line (NDJSON), made as each line is written. */
function* jsonLines(entries: readonly DenyEntry[]): Generator<string> {
  for (const entry of entries) yield JSON.stringify(entry);
}

/** The entries as a table with a header, every column left-aligned; a past `until` is marked, as instances ignore it. */
export function denyTable(entries: readonly DenyEntry[], now: number): string {
  return [...denyTableLines(entries, now)].join('\n');
}

/** denyTable's lines, one at a time: the column widths are measured first, then each row is made as it is written. */
export function* denyTableLines(entries: readonly DenyEntry[], now: number): Generator<string> {
  if (entries.length === 0) return;
  const header = ['MATCH', 'KIND', 'UNTIL', 'REASON'];
  const cells = (entry: DenyEntry) => [
    entry.match,
    denyKind(entry.match),
    entry.until === undefined ? '-' : `${isoTime(entry.until)}${entry.until <= now ? ' (expired)' : ''}`,
    entry.reason ?? '',
  ];
  const widths = header.map((cell) => cell.length);
  for (const entry of entries) {
    const row = cells(entry);
    for (let column = 0; column < 3; column++) widths[column] = Math.max(widths[column]!, row[column]!.length);
  }
  const line = (row: string[]) =>
    row
      .map((cell, column) => cell.padEnd(widths[column]!))
      .join('  ')
      .trimEnd();
  yield line(header);
  for (const entry of entries) yield line(cells(entry));
}

interface ListedPage {
  offset: number;
  limit: number;
  shown: number;
  revision: number | undefined;
}

function summary(entries: readonly DenyEntry[], name: string, connection: Connection, page: ListedPage): string {
  let invalid = 0;
  for (const entry of entries) if (denyKind(entry.match) === 'invalid') invalid++;
  const note = invalid === 0 ? '' : `; ${count(invalid)} written like addresses are not (instances ignore them: remove them)`;
  const revision = page.revision === undefined ? '' : ` (revision ${page.revision})`;
  let printed = '';
  if (page.offset > 0 || page.shown < entries.length) {
    const next = page.offset + page.shown < entries.length ? `; the next page: --offset ${page.offset + page.shown}` : '';
    printed =
      page.shown === 0
        ? `; printed none (--offset ${page.offset} is past the end)`
        : `; printed entries ${page.offset + 1} to ${page.offset + page.shown}${next}`;
  }
  return `the deny list of ${JSON.stringify(name)} holds ${count(entries.length)} at ${connection.where}${revision}${printed}${note}\n`;
}

export function count(n: number): string {
  return n === 1 ? '1 entry' : `${n} entries`;
}
