/**
 * `sluice config`: reads and changes a limiter's runtime configuration in the shared store (core's
 * config-document.ts), which every instance running `watchConfig` applies without a restart. Each write goes
 * through core's writeLimiterConfig, so a rule is checked by the same factories as in code and a bad one is
 * refused before it is stored. Exit codes: 0 done, 1 the store failed (unreachable, refused, a stored document
 * that is not valid), 2 the command or its input is wrong (config-connection.ts); `deny` is in config-deny.ts
 * and config-deny-mode.ts.
 */
import { SluiceError, isSluiceError, type LimiterMode } from '@sluice/core';
import {
  deleteLimiterConfig,
  readLimiterConfig,
  setLimiterMode,
  setLimiterRules,
  setQuota,
  removeQuota,
  type LimiterConfig,
  type RulesInput,
} from '@sluice/core/config';
import type { Command } from 'commander';
import { messageOf, pickUp, run, withConnection, type Connection, type ConnectionFlags } from './config-connection.js';
import { registerDeny } from './config-deny.js';
import { skippedDenyEntries, skippedWarning } from './deny-input.js';
import { registerBackup } from './config-backup.js';
import { registerDenyMode } from './config-deny-mode.js';

const RULES_EXAMPLE = `'[{"algorithm":"gcra","limit":10,"period":"1s"}]'`;

export function registerConfig(program: Command): void {
  const config = program
    .command('config')
    .description("Read and change a limiter's rules, mode, per-identity quotas and deny list in the shared store (applied by watchConfig)")
    // Usage errors (a missing flag, an unknown command) exit 2 like a bad rule; commander would exit 1.
    .exitOverride((error) => process.exit(error.exitCode === 0 ? 0 : 2));

  withConnection(config.command('get').description('Print the stored configuration as JSON (null when none is stored)')).action(
    (flags: ConnectionFlags) =>
      run(flags, false, async ({ source }) => {
        // Read as instances read it: a deny entry they leave out is left out here too, with one warning.
        const skipped = skippedDenyEntries();
        let document: LimiterConfig | undefined;
        try {
          document = await readLimiterConfig(source, flags.name, { onBadDenyEntry: skipped.onBadDenyEntry });
        } catch (error) {
          if (!isSluiceError(error) || error.code !== 'INVALID_OPTION') throw error;
          process.stdout.write(`${await source.read(flags.name)}\n`);
          throw new SluiceError(
            'STORE_ERROR',
            `the stored configuration of ${JSON.stringify(flags.name)} is not valid, so instances ignore it and keep their last good one: ${messageOf(error.cause ?? error)}; write a good one (sluice config set ...) or delete it (sluice config clear)`,
          );
        }
        if (document === undefined) {
          process.stdout.write('null\n');
          process.stderr.write(
            `no configuration is stored for ${JSON.stringify(flags.name)}: instances use the rules and mode in their code\n`,
          );
          return;
        }
        const warning = skippedWarning(skipped.entries, flags.name);
        if (warning !== '') process.stderr.write(`sluice config get: ${warning}\n`);
        process.stdout.write(`${JSON.stringify(document, null, 2)}\n`);
      }),
  );

  withConnection(config.command('set').description('Set the rules every instance uses (JSON rule specs)'))
    .requiredOption('--rules <json>', `the rules, e.g. ${RULES_EXAMPLE}`)
    .action((flags: ConnectionFlags & { rules: string }) =>
      run(flags, true, (connection) =>
        report(connection, flags.name, setLimiterRules(connection.source, flags.name, parseRules(flags.rules, '--rules'))),
      ),
    );

  const modes: Array<[string, LimiterMode, string]> = [
    ['off', 'off', 'Kill switch: every instance allows everything and counts nothing (the deny list still applies: deny mode)'],
    ['shadow', 'shadow', 'Dark launch: count and report what would be refused, refuse nothing'],
    ['on', 'enforce', 'Enforce the rules again (mode enforce)'],
  ];
  for (const [command, mode, description] of modes) {
    withConnection(config.command(command).description(description)).action((flags: ConnectionFlags) =>
      run(flags, true, (connection) => report(connection, flags.name, setLimiterMode(connection.source, flags.name, mode))),
    );
  }

  withConnection(
    config.command('clear').description("Delete the stored configuration: every instance goes back to its code's configuration"),
  ).action((flags: ConnectionFlags) =>
    run(flags, true, async (connection) => {
      await deleteLimiterConfig(connection.source, flags.name);
      process.stderr.write(`deleted the configuration of ${JSON.stringify(flags.name)} (${connection.where}); ${pickUp(connection)}\n`);
    }),
  );

  const quota = config
    .command('quota')
    .description("Set or remove one identity's rules (over the limiter's rules, for that identity alone)");
  withConnection(
    quota
      .command('set')
      .description("Set one identity's rules")
      .argument('<identity>', 'the identity, as the limiter sees it')
      .argument('<rules>', `the rules as JSON, e.g. ${RULES_EXAMPLE}`),
  ).action((identity: string, rules: string, flags: ConnectionFlags) =>
    run(flags, true, (connection) =>
      report(connection, flags.name, setQuota(connection.source, flags.name, identity, parseRules(rules, '<rules>'))),
    ),
  );
  withConnection(
    quota
      .command('remove')
      .description("Remove one identity's rules: it goes back to the limiter's")
      .argument('<identity>', 'the identity'),
  ).action((identity: string, flags: ConnectionFlags) =>
    run(flags, true, (connection) => report(connection, flags.name, removeQuota(connection.source, flags.name, identity))),
  );

  registerDeny(config);
  // The deny list's own switch (config-deny-mode.ts): the kill switch above leaves the list alone.
  registerDenyMode(config.commands.find((command) => command.name() === 'deny')!);
  registerBackup(config);
}

async function report(connection: Connection, name: string, written: Promise<LimiterConfig>): Promise<void> {
  const document = await written;
  process.stdout.write(`${JSON.stringify(document, null, 2)}\n`);
  const mode = document.mode === undefined ? "the code's mode" : `mode ${document.mode}`;
  process.stderr.write(
    `wrote revision ${document.revision} of ${JSON.stringify(name)} (${mode}) to ${connection.where}; ${pickUp(connection)}\n`,
  );
}

export function parseRules(text: string, field: string): RulesInput {
  try {
    return JSON.parse(text) as RulesInput;
  } catch (error) {
    throw new SluiceError(
      'INVALID_OPTION',
      `${field} must be JSON rule specs such as ${RULES_EXAMPLE}, got text that is not JSON (${messageOf(error)})`,
    );
  }
}
