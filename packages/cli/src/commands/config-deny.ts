/**
 * `sluice config deny`: the deny list in a limiter's runtime configuration (core's deny-entries.ts). Every
 * instance running `watchConfig` picks a change up, and @sluice/http answers a listed identity or address 403
 * before any limiter decides. Writes go through core's addDenyEntry and removeDenyEntry (compare and set, so two
 * operators at once both land).
 *
 * What `add` accepts is deny-input.ts's: an address or block that parses, an identity with a prefix (`user:42`), or
 * another identity with `--identity`; anything else is refused (exit 2) before anything is stored. `list` and
 * `remove` read the list as instances do: an entry that is not valid (written by hand, or by another version) is
 * left out with one warning, and `remove` removes it by its match.
 * Exit codes: those of config-connection.ts (0, 1, 2), and 3 when `remove` finds no entry with that match.
 */
import { addDenyEntry, readLimiterConfig, removeDenyEntry, type DenyEntry } from '@sluice/core/config';
import type { Command } from 'commander';
import { isoTime } from '../format.js';
import { fail, pickUp, run, withConnection, type Connection, type ConnectionFlags } from './config-connection.js';
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

  withConnection(deny.command('list').description('Print the deny list: match, kind (ident, IPv4, IPv6), until, reason'))
    .option('--json', 'print the entries as a JSON array instead of a table')
    .action((flags: ConnectionFlags & { json?: boolean }) =>
      run(flags, false, async (connection) => {
        const skipped = skippedDenyEntries();
        const read = await readLimiterConfig(connection.source, flags.name, { onBadDenyEntry: skipped.onBadDenyEntry });
        const entries = read?.deny ?? [];
        const warning = skippedWarning(skipped.entries, flags.name);
        if (warning !== '') process.stderr.write(`sluice config deny list: ${warning}\n`);
        if (flags.json === true) process.stdout.write(`${JSON.stringify(entries, null, 2)}\n`);
        else if (entries.length > 0) process.stdout.write(`${denyTable(entries, Date.now())}\n`);
        process.stderr.write(summary(entries, flags.name, connection));
      }),
    );
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
