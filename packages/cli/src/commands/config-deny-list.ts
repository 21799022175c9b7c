/**
 * `sluice config deny list`: prints a limiter's deny list, or a page of it (`--limit`, `--offset`), as a table or one
 * JSON entry per line (`--json`), written in chunks as stdout drains, never as one string.
 *
 * Where the source keeps the list in a structure of its own (`source.deny`, core's deny/source.ts), the list is
 * read a page of the store's at a time, in the store's order: NDJSON is written as each page arrives, and a read
 * stops once it has printed `--limit` entries (and learnt whether more follow), so a page of 100 from a list of
 * 100,000 reads about that page, plus the pages `--offset` skips. The summary then names the structure's version, so a
 * script paging through can see the list changed under it, and the total only when the read reached the end. A
 * table measures its columns before its first row, so it holds the entries it prints (all of them without
 * `--limit`). Where the list is the document's `deny` field (a source without a structure, or a document an older
 * release wrote before any structure existed), the document is read whole, in stored order, as before.
 *
 * Either way an entry that is not valid (written by hand, or by another version) is left out with one warning on
 * stderr, as instances leave it out.
 */
import { once } from 'node:events';
import { SluiceError } from '@sluice/core';
import { readLimiterConfig, type DenyEntry, type DenyListSource, type DenyListVersion } from '@sluice/core/config';
import { isoTime } from '../format.js';
import type { Connection } from './config-connection.js';
import { denyKind, skippedDenyEntries, skippedWarning } from './deny-input.js';
import { readDenyPages, type DenyPages } from './deny-pages.js';

/** What `deny list` was asked for: a page (offset, limit; Infinity: all) and a format. */
export interface ListRequest {
  name: string;
  offset: number;
  limit: number;
  json: boolean;
}

/** Prints the list (or the page asked for) to stdout and its summary and warnings to stderr. */
export async function listDeny(connection: Connection, request: ListRequest): Promise<void> {
  const { deny } = connection.source;
  if (deny !== undefined && (await listStructure(connection, deny, request))) return;
  await listDocument(connection, request);
}

/** The list as the document's `deny` field, read whole. */
async function listDocument(connection: Connection, request: ListRequest): Promise<void> {
  const skipped = skippedDenyEntries();
  const read = await readLimiterConfig(connection.source, request.name, { onBadDenyEntry: skipped.onBadDenyEntry });
  const entries = read?.deny ?? [];
  const warning = skippedWarning(skipped.entries, request.name, false);
  if (warning !== '') process.stderr.write(`sluice config deny list: ${warning}\n`);
  const shown = entries.slice(request.offset, request.offset + request.limit);
  await writeLines(request.json ? jsonLines(shown) : denyTableLines(shown, Date.now()));
  const held = `the deny list of ${JSON.stringify(request.name)} holds ${count(entries.length)} at ${connection.where}`;
  const revision = read?.revision === undefined ? '' : ` (revision ${read.revision})`;
  const more = request.offset + shown.length < entries.length;
  process.stderr.write(`${held}${revision}${printedNote(request.offset, shown.length, more)}${invalidNote(invalidCount(shown))}\n`);
}

/**
 * The list from the source's structure, a page at a time. Answers false, having printed nothing, when no structure
 * is stored: then the document's field, if any, is the list (as instances read it).
 */
async function listStructure(connection: Connection, deny: DenyListSource, request: ListRequest): Promise<boolean> {
  const { name, offset, limit } = request;
  const skipped = skippedDenyEntries();
  const pages = readDenyPages(deny, name, { wanted: offset + limit, onBad: skipped.onBadDenyEntry });
  const first = await pages.next();
  if (pages.version === undefined) return false;
  let seen = 0;
  // What was printed: counted, and kept only for a table (NDJSON lines go out and are let go).
  const printed = { count: 0, invalid: 0 };
  const rows: DenyEntry[] = [];
  const lines: string[] = [];
  for (let page = first; page !== undefined; page = await pages.next()) {
    for (const entry of page) {
      if (seen++ < offset || printed.count >= limit) continue;
      printed.count++;
      if (denyKind(entry.match) === 'invalid') printed.invalid++;
      if (request.json) lines.push(JSON.stringify(entry));
      else rows.push(entry);
    }
    // NDJSON goes out as each page arrives; a table waits for its last row to know its widths. A reader gone away
    // (`| head`) reads no more pages.
    if (lines.length > 0) await writeLines(lines.splice(0));
    if (stdoutClosed) break;
    if (printed.count >= limit && (await pages.hasMore(offset + printed.count))) break;
  }
  if (!request.json) await writeLines(denyTableLines(rows, Date.now()));
  const warning = skippedWarning(skipped.entries, name, true);
  if (warning !== '') process.stderr.write(`sluice config deny list: ${warning}\n`);
  process.stderr.write(`${structureSummary(connection, request, printed, pages)}\n`);
  return true;
}

function structureSummary(
  connection: Connection,
  request: ListRequest,
  printed: { count: number; invalid: number },
  pages: Pick<DenyPages, 'version' | 'lastVersion' | 'ended' | 'distinct'>,
): string {
  const list = `the deny list of ${JSON.stringify(request.name)}`;
  const at = `at ${connection.denyWhere} (${versionText(pages.version!)})`;
  // Changes made while the pages were read: an entry changed meanwhile may show in its old state, or not at all.
  const moved =
    pages.lastVersion !== undefined && !sameVersion(pages.lastVersion, pages.version!)
      ? `; it changed during the read (now ${versionText(pages.lastVersion)}): read it again for a list of one moment`
      : '';
  const invalid = invalidNote(printed.invalid);
  const last = request.offset + printed.count;
  // Not read to its end: its size is not known, only that more follows.
  if (!pages.ended)
    return `printed entries ${request.offset + 1} to ${last} of ${list} ${at}; the next page: --offset ${last}${moved}${invalid}`;
  return `${list} holds ${count(pages.distinct)} ${at}${printedNote(request.offset, printed.count, last < pages.distinct)}${moved}${invalid}`;
}

/** `version 12, epoch m3x1k9a2`: where a structure's list is. */
export function versionText(version: DenyListVersion): string {
  return `version ${version.version}, epoch ${version.epoch}`;
}

function sameVersion(a: DenyListVersion, b: DenyListVersion): boolean {
  return a.epoch === b.epoch && a.version === b.version;
}

/** Which entries were printed, when not the whole list; empty when it was. */
function printedNote(offset: number, printed: number, more: boolean): string {
  if (offset === 0 && !more) return '';
  if (printed === 0) return `; printed none (--offset ${offset} is past the end)`;
  const next = more ? `; the next page: --offset ${offset + printed}` : '';
  return `; printed entries ${offset + 1} to ${offset + printed}${next}`;
}

/** Entries printed that are written like addresses but are not: instances ignore them. */
function invalidNote(invalid: number): string {
  return invalid === 0 ? '' : `; ${count(invalid)} written like addresses are not (instances ignore them: remove them)`;
}

/** How many of `entries` are written like addresses but are not. */
function invalidCount(entries: readonly DenyEntry[]): number {
  let invalid = 0;
  for (const entry of entries) if (denyKind(entry.match) === 'invalid') invalid++;
  return invalid;
}

/** Lines written to stdout in chunks of this many, each chunk waiting for the one before to drain. */
const LINES_PER_CHUNK = 1_000;
/** Set once stdout's reader has gone away (`| head`): nothing more is written. */
let stdoutClosed = false;
/** A failure to write other than the reader going away, reported once the writing stops. */
let stdoutFailure: Error | undefined;
let listening = false;

/**
 * Writes `lines` to stdout a chunk at a time, waiting for a full pipe to drain, so a list of 100,000 entries is never
 * one string of megabytes; a reader that goes away (`| head`) ends the output quietly. Called once per page.
 */
async function writeLines(lines: Iterable<string>): Promise<void> {
  if (!listening) {
    // One listener for the process, left listening: the last chunk may fail after this returns, and an 'error' no
    // one hears would crash the process.
    listening = true;
    process.stdout.on('error', (error: NodeJS.ErrnoException) => {
      stdoutClosed = true;
      if (error.code !== 'EPIPE') stdoutFailure ??= new SluiceError('STORE_ERROR', `could not write the list to stdout: ${error.message}`);
    });
  }
  let chunk: string[] = [];
  const flush = async () => {
    const text = `${chunk.join('\n')}\n`;
    chunk = [];
    // A write error ends the wait too ('error' rejects once()); the listener above has said what it was.
    if (!process.stdout.write(text)) await once(process.stdout, 'drain').catch(() => {});
  };
  for (const line of lines) {
    if (stdoutClosed) break;
    chunk.push(line);
    if (chunk.length === LINES_PER_CHUNK) await flush();
  }
  if (chunk.length > 0 && !stdoutClosed) await flush();
  if (stdoutFailure !== undefined) throw stdoutFailure;
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

export function count(n: number): string {
  return n === 1 ? '1 entry' : `${n} entries`;
}
