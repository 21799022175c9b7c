/**
 * `sluice config deny`: the deny list in a limiter's runtime configuration (core's deny-entries.ts). Every
 * instance running `watchConfig` picks a change up, and @sluice/http answers a listed identity or address 403
 * before any limiter decides. Writes go through core's addDenyEntry and removeDenyEntry (compare and set, so two
 * operators at once both land).
 *
 * A `match` is read as @sluice/http reads it: text made only of hex digits, `.`, `:` and `/` (after an optional
 * `ip:`) is an address or CIDR block and must parse as one, so `203.0.113.0/33` or `1.2.3` is refused here (exit
 * 2) instead of being stored and ignored by every instance; anything else is an identity, matched exactly.
 * Exit codes: those of config-connection.ts (0, 1, 2), and 3 when `remove` finds no entry with that match.
 */
import { SluiceError, parseDuration } from '@sluice/core';
import { addDenyEntry, readLimiterConfig, removeDenyEntry, type DenyEntry } from '@sluice/core/config';
import { parseRange } from '@sluice/http/ip';
import type { Command } from 'commander';
import { isoTime } from '../format.js';
import { fail, pickUp, run, withConnection, type Connection, type ConnectionFlags } from './config-connection.js';

/** What a `match` is: an identity, an IPv4 or IPv6 address or block, or (a stored entry only) neither. */
export type DenyKind = 'ident' | 'IPv4' | 'IPv6' | 'invalid';

/** Characters an IP address or block is written with (the HTTP layer's test): such a match must parse. */
const ADDRESS_LIKE = /^[0-9a-fA-F:./]+$/;

/** Exit code of `remove` when no entry has that match: nothing failed, but nothing was removed either. */
const NOT_FOUND = 3;

/** How the HTTP layer will read `match`. */
export function denyKind(match: string): DenyKind {
  const text = match.startsWith('ip:') ? match.slice(3) : match;
  if (!ADDRESS_LIKE.test(text) || !/[.:/]/.test(text)) return 'ident';
  const range = parseRange(text);
  if (range === undefined) return 'invalid';
  return range.network.version === 4 ? 'IPv4' : 'IPv6';
}

export function registerDeny(config: Command): void {
  const deny = config
    .command('deny')
    .description('Add, remove and list identities and IP ranges every instance refuses outright (403, by @sluice/http)');

  withConnection(
    deny
      .command('add')
      .description('Deny an identity (exactly) or an IP address or CIDR block; an entry with the same match is replaced')
      .argument('<match>', 'an identity (user:42, an API key) or an address or block (203.0.113.0/24, 2001:db8::/56)'),
  )
    .option('--for <duration>', 'a temporary block: it ends after this long (1h, 30m, 7d); default: until removed')
    .option('--reason <text>', 'why, for operators and the 403 body (at most 200 characters)')
    .action((match: string, flags: ConnectionFlags & { for?: string; reason?: string }) => {
      let kind: DenyKind;
      let forMs: number | undefined;
      try {
        kind = checkMatch(match);
        forMs = flags.for === undefined ? undefined : parseDuration(flags.for, '--for');
      } catch (error) {
        fail(error);
        return;
      }
      return run(flags, true, async (connection) => {
        const now = Date.now();
        const entry: DenyEntry = {
          match,
          ...(forMs === undefined ? {} : { until: now + forMs }),
          ...(flags.reason === undefined ? {} : { reason: flags.reason }),
        };
        const written = await addDenyEntry(connection.source, flags.name, entry, { now });
        const stored = written.deny?.find((kept) => kept.match === match);
        process.stdout.write(`${JSON.stringify(stored, null, 2)}\n`);
        const until = stored?.until === undefined ? 'until removed' : `until ${isoTime(stored.until)}`;
        process.stderr.write(
          `denied ${JSON.stringify(match)} (${kind}) ${until}: revision ${written.revision} of ${JSON.stringify(flags.name)} holds ${count(written.deny?.length ?? 0)} at ${connection.where}; ${pickUp(connection)}\n`,
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

  withConnection(deny.command('list').description('Print the deny list: match, kind (ident, IPv4, IPv6), until, reason'))
    .option('--json', 'print the entries as a JSON array instead of a table')
    .action((flags: ConnectionFlags & { json?: boolean }) =>
      run(flags, false, async (connection) => {
        const entries = (await readLimiterConfig(connection.source, flags.name))?.deny ?? [];
        if (flags.json === true) process.stdout.write(`${JSON.stringify(entries, null, 2)}\n`);
        else if (entries.length > 0) process.stdout.write(`${denyTable(entries, Date.now())}\n`);
        process.stderr.write(summary(entries, flags.name, connection));
      }),
    );
}

/** The kind of a match given to `add`; one that looks like an address but is not one is refused. */
export function checkMatch(match: string): DenyKind {
  const kind = denyKind(match);
  if (kind === 'invalid') {
    throw new SluiceError(
      'INVALID_OPTION',
      `<match> ${JSON.stringify(match)} is written like an IP address or CIDR block but is not one; give an IPv4 or IPv6 address, or a block such as 203.0.113.0/24 (prefix 0 to 32) or 2001:db8::/56 (prefix 0 to 128)`,
    );
  }
  return kind;
}

/** The entries as a table with a header, every column left-aligned; a past `until` is marked, as instances ignore it. */
export function denyTable(entries: readonly DenyEntry[], now: number): string {
  const rows = [['MATCH', 'KIND', 'UNTIL', 'REASON']];
  for (const entry of entries) {
    const until = entry.until === undefined ? '-' : `${isoTime(entry.until)}${entry.until <= now ? ' (expired)' : ''}`;
    rows.push([entry.match, denyKind(entry.match), until, entry.reason ?? '']);
  }
  const widths = rows[0]!.map((_, column) => Math.max(...rows.map((row) => row[column]!.length)));
  return rows
    .map((row) =>
      row
        .map((cell, column) => cell.padEnd(widths[column]!))
        .join('  ')
        .trimEnd(),
    )
    .join('\n');
}

function summary(entries: readonly DenyEntry[], name: string, connection: Connection): string {
  const invalid = entries.filter((entry) => denyKind(entry.match) === 'invalid').length;
  const note = invalid === 0 ? '' : `; ${count(invalid)} written like addresses are not (instances ignore them: remove them)`;
  return `the deny list of ${JSON.stringify(name)} holds ${count(entries.length)} at ${connection.where}${note}\n`;
}

function count(n: number): string {
  return n === 1 ? '1 entry' : `${n} entries`;
}
