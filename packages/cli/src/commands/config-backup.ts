/**
 * `sluice config export` and `sluice config import`: a copy of every limiter's runtime configuration document, to
 * back up the configuration kept in a store that may lose it (a Redis without persistence restarted empty) and to
 * restore it. Instances running watchConfig keep their last configuration when the document is gone; a new instance
 * started meanwhile only has its code's, which is what `import` puts right.
 *
 * The export is one JSON object: `{ "sluice": "config-export", "version": 1, "exportedAt": <epoch ms>, "limiters":
 * { "<name>": <document> } }`, each document with its deny list as its `deny` field, wherever the store keeps the
 * list (core's readLimiterConfig reads a source's own deny structure whole into that field). Names are listed from
 * the store (a SCAN on Redis, a SELECT on SQLite); a Redis Cluster or Upstash cannot list them, so `--names` gives
 * them. A document deleted on purpose (a tombstone) is not exported; a deny entry that is not valid is left out with
 * a warning, as instances leave it out. `import` checks every document before it writes any, then replaces each
 * limiter's document by compare and set, keeping the exported revision when it is above the stored one (so
 * instances that kept it see the same revision back) and taking the next one otherwise. Where the source keeps the
 * deny list in a structure of its own, the document is written without `deny` and the structure is made to hold
 * exactly the exported entries (core's replaceDenyEntries: only what differs is changed). Exit codes: those of
 * config-connection.ts (0, 1, 2).
 */
import { readFileSync } from 'node:fs';
import { SluiceError, isSluiceError } from '@sluice/core';
import { parseLimiterConfig, readLimiterConfig, replaceDenyEntries, type ConfigSource, type LimiterConfig } from '@sluice/core/config';
import type { Command } from 'commander';
import { configNameLister } from '../dashboard/analytics.js';
import { connect, fail, messageOf, withStore, type Connection, type StoreFlags } from './config-connection.js';
import { skippedDenyEntries, skippedWarning } from './deny-input.js';
import { readStandardInput } from './standard-input.js';

/** What `export` writes and `import` reads. */
export interface ConfigExport {
  readonly sluice: 'config-export';
  readonly version: 1;
  readonly exportedAt: number;
  readonly limiters: Readonly<Record<string, LimiterConfig>>;
}

interface BackupFlags extends StoreFlags {
  names?: string;
}

/** Importers that lose the compare and set read again, this many times in all. */
const MAX_ATTEMPTS = 20;

export function registerBackup(config: Command): void {
  withStore(
    config
      .command('export')
      .description("Print every limiter's stored configuration as one JSON document (a backup for `sluice config import`)"),
  )
    .option('--names <names>', 'comma-separated limiter names (required where the store cannot list them: Redis Cluster, Upstash)')
    .action((flags: BackupFlags) =>
      connected(flags, false, async (connection) => {
        const names = await namesOf(connection, flags);
        const limiters: Record<string, LimiterConfig> = {};
        const problems: string[] = [];
        for (const name of names.sort()) {
          const skipped = skippedDenyEntries();
          let document: LimiterConfig | undefined;
          try {
            document = await readLimiterConfig(connection.source, name, { onBadDenyEntry: skipped.onBadDenyEntry });
          } catch (error) {
            // A document that is not valid is left out; a store that failed fails the export.
            if (!isSluiceError(error) || error.code !== 'INVALID_OPTION') throw error;
            problems.push(`${JSON.stringify(name)}: ${messageOf(error)}`);
            continue;
          }
          if (document === undefined || document.deleted === true) continue;
          limiters[name] = document;
          const warning = skippedWarning(skipped.entries, name, connection.source.deny !== undefined);
          if (warning !== '') process.stderr.write(`sluice config export: ${warning}\n`);
        }
        const exported: ConfigExport = { sluice: 'config-export', version: 1, exportedAt: Date.now(), limiters };
        process.stdout.write(`${JSON.stringify(exported, null, 2)}\n`);
        const count = Object.keys(limiters).length;
        process.stderr.write(`exported the configuration of ${count} ${count === 1 ? 'limiter' : 'limiters'} from ${connection.where}\n`);
        if (problems.length > 0) {
          throw new SluiceError(
            'STORE_ERROR',
            `left out ${problems.length} stored ${problems.length === 1 ? 'document that is' : 'documents that are'} not valid (instances ignore them too): ${problems.join('; ')}`,
          );
        }
      }),
    );

  withStore(
    config
      .command('import')
      .description("Replace each limiter's stored configuration by the one in an export (a file, or standard input)")
      .argument('[file]', 'the file `sluice config export` wrote; standard input when left out or -'),
  ).action(async (file: string | undefined, flags: BackupFlags) => {
    let exported: ConfigExport;
    try {
      exported = parseExport(await readInput(file), file ?? 'standard input');
    } catch (error) {
      fail(error);
      return;
    }
    return connected(flags, true, async (connection) => {
      for (const [name, document] of Object.entries(exported.limiters)) {
        const written = await restore(connection.source, name, document);
        const entries =
          written.deny === undefined ? '' : `, ${written.deny.length} deny ${written.deny.length === 1 ? 'entry' : 'entries'}`;
        process.stderr.write(`restored ${JSON.stringify(name)} at revision ${written.revision}${entries} (${connection.where})\n`);
      }
      const count = Object.keys(exported.limiters).length;
      process.stderr.write(`imported the configuration of ${count} ${count === 1 ? 'limiter' : 'limiters'}; watching instances apply it\n`);
    });
  });
}

/** Connects (no --name: these commands cover every limiter), runs, reports a failure, always disconnects. */
async function connected(flags: BackupFlags, writes: boolean, action: (connection: Connection) => Promise<void>): Promise<void> {
  let connection: Connection | undefined;
  try {
    connection = await connect(flags, { writes });
    await action(connection);
  } catch (error) {
    fail(error);
  } finally {
    await connection?.close().catch(() => {});
  }
}

async function namesOf(connection: Connection, flags: BackupFlags): Promise<string[]> {
  if (flags.names !== undefined) {
    const names = flags.names
      .split(',')
      .map((name) => name.trim())
      .filter((name) => name.length > 0);
    if (names.length === 0)
      throw new SluiceError('INVALID_OPTION', `--names must list limiter names such as api,search, got ${JSON.stringify(flags.names)}`);
    return [...new Set(names)];
  }
  const list = configNameLister(connection.store);
  if (list === undefined) {
    throw new SluiceError(
      'INVALID_OPTION',
      'this store cannot list the limiters that have a configuration (a Redis Cluster, Upstash): give them with --names api,search',
    );
  }
  return [...(await list())];
}

async function readInput(file: string | undefined): Promise<string> {
  if (file === undefined || file === '-') {
    if (process.stdin.isTTY === true) {
      throw new SluiceError(
        'INVALID_OPTION',
        'give the export as a file (sluice config import backup.json) or on standard input (< backup.json)',
      );
    }
    return readStandardInput();
  }
  try {
    return readFileSync(file, 'utf8');
  } catch (error) {
    throw new SluiceError('INVALID_OPTION', `could not read ${JSON.stringify(file)}: ${messageOf(error)}`, { cause: error });
  }
}

/** The export, every document checked as instances check it: one that is not valid refuses the whole import. */
export function parseExport(text: string, where: string): ConfigExport {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (error) {
    throw new SluiceError('INVALID_OPTION', `${where} is not JSON (${messageOf(error)}); give what sluice config export printed`);
  }
  const candidate = value as Partial<ConfigExport> | null;
  if (
    typeof candidate !== 'object' ||
    candidate === null ||
    candidate.sluice !== 'config-export' ||
    candidate.version !== 1 ||
    typeof candidate.limiters !== 'object' ||
    candidate.limiters === null ||
    Array.isArray(candidate.limiters)
  ) {
    throw new SluiceError(
      'INVALID_OPTION',
      `${where} is not an export of sluice config export: expected { "sluice": "config-export", "version": 1, "limiters": { "<name>": <document> } }`,
    );
  }
  const limiters: Record<string, LimiterConfig> = {};
  for (const [name, document] of Object.entries(candidate.limiters)) {
    if (name.length === 0) throw new SluiceError('INVALID_OPTION', `${where}: limiters: a limiter name must be a non-empty string`);
    try {
      limiters[name] = parseLimiterConfig(document);
    } catch (error) {
      throw new SluiceError('INVALID_OPTION', `${where}: limiters[${JSON.stringify(name)}]: ${messageOf(error)}; nothing was imported`);
    }
    if (limiters[name]!.deleted === true) {
      throw new SluiceError(
        'INVALID_OPTION',
        `${where}: limiters[${JSON.stringify(name)}] is a deleted configuration; nothing was imported`,
      );
    }
  }
  return { sluice: 'config-export', version: 1, exportedAt: typeof candidate.exportedAt === 'number' ? candidate.exportedAt : 0, limiters };
}

/**
 * Writes `document` as `name`'s configuration over whatever is stored, by compare and set: its own revision when
 * that is above the stored one, else the next. A stored document that is not valid (no revision to compare) is
 * written over. Where the source has a deny structure, the document goes without `deny`, and then the structure is
 * made to hold its entries (none when it has no `deny`). Returns what was written, the entries as `deny`.
 */
async function restore(source: ConfigSource, name: string, document: LimiterConfig): Promise<LimiterConfig> {
  const { deny, ...withoutDeny } = document;
  const kept = source.deny === undefined ? document : withoutDeny;
  for (let attempt = 1; attempt <= MAX_ATTEMPTS; attempt++) {
    const stored = storedRevision(await source.read(name));
    const written: LimiterConfig = { ...kept, revision: Math.max(document.revision, (stored ?? 0) + 1) };
    const text = JSON.stringify(written);
    if (source.replace === undefined || stored === undefined) await source.write(name, text);
    else if (!(await source.replace(name, stored, text))) continue;
    if (source.deny === undefined) return written;
    await replaceDenyEntries(source, name, deny ?? []);
    return { ...written, ...(deny === undefined ? {} : { deny }) };
  }
  throw new SluiceError(
    'STORE_ERROR',
    `the configuration of ${JSON.stringify(name)} changed under this import ${MAX_ATTEMPTS} times in a row (other writers); try again`,
  );
}

/** The stored document's revision: 0 when none is stored, undefined when what is stored has none (not valid). */
function storedRevision(text: string | undefined | null): number | undefined {
  if (text === undefined || text === null) return 0;
  try {
    const revision = (JSON.parse(text) as { revision?: unknown } | null)?.revision;
    return typeof revision === 'number' && Number.isSafeInteger(revision) && revision >= 0 ? revision : undefined;
  } catch {
    return undefined;
  }
}
