/**
 * `sluice config deny`: the deny list of a limiter's runtime configuration (core's deny/entries.ts). Every
 * instance running `watchConfig` picks a change up, and @sluice/http answers a listed identity or address 403
 * before any limiter decides. Writes go through core's addDenyEntry and removeDenyEntry: where the source keeps
 * the list in a structure of its own (`source.deny`), each is one change of that one entry, whatever the list's
 * size; where the list is the document's `deny` field, a compare-and-set rewrite of the document (so two operators
 * at once both land either way).
 *
 * What `add` accepts is deny-input.ts's: an address or block that parses, an identity with a prefix (`user:42`), or
 * another identity with `--identity`; anything else is refused (exit 2) before anything is stored. `add` prints the
 * entry stored and where the write left the list: the structure's version, or the document's revision and size.
 * `list` and `remove` read the list as instances do: an entry that is not valid (written by hand, or by another
 * version) is left out with one warning, and `remove` removes it by its match. `list` is config-deny-list.ts.
 * `import` (config-deny-import.ts) applies a file of matches as the difference from the list.
 * Exit codes: those of config-connection.ts (0, 1, 2), and 3 when `remove` finds no entry with that match.
 */
import { SluiceError } from '@sluice/core';
import { addDenyEntry, removeDenyEntry, type DenyEntry, type DenyWriteResult } from '@sluice/core/config';
import type { Command } from 'commander';
import { isoTime } from '../format.js';
import { fail, pickUp, run, withConnection, type Connection, type ConnectionFlags } from './config-connection.js';
import { count, listDeny, versionText } from './config-deny-list.js';
import { registerDenyImport } from './config-deny-import.js';
import { checkMatch, denyUntil, type DenyKind } from './deny-input.js';

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
        const stored = written.entries[0]!;
        process.stdout.write(`${JSON.stringify(stored, null, 2)}\n`);
        const ends = stored.until === undefined ? 'until removed' : `until ${isoTime(stored.until)}`;
        process.stderr.write(
          `denied ${JSON.stringify(match)} (${kind}) ${ends}: ${writtenWhere(written, flags.name, connection)}; ${pickUp(connection)}\n`,
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
        "Print the deny list, in the store's order: match, kind (ident, IPv4, IPv6), until, reason; a page of it with --limit and --offset",
      ),
  )
    .option('--json', 'print one entry per line as JSON (NDJSON: match, until, reason, addedAt as stored)')
    .option('--limit <n>', 'print at most this many entries (a page); where the list has a structure of its own, read no further')
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
      return run(flags, false, (connection) => listDeny(connection, { name: flags.name, ...page, json: flags.json === true }));
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

/** Where the write left the list: the structure's version, or the document's revision and size. */
function writtenWhere(written: DenyWriteResult, name: string, connection: Connection): string {
  if (written.version !== undefined)
    return `${versionText(written.version)} of the deny list of ${JSON.stringify(name)} at ${connection.denyWhere}`;
  return `revision ${written.revision} of ${JSON.stringify(name)} holds ${count(written.size ?? 0)} at ${connection.where}`;
}
