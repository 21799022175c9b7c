import { Command } from 'commander';
import { registerConfig } from './commands/config.js';
import { createRequire } from 'node:module';

// The version comes from package.json at run time so the binary never reports a stale one.
const require = createRequire(import.meta.url);
const { version } = require('../package.json') as { version: string };

/** Builds the `sluice` program. Each subcommand registers itself in one line below. */
export function createProgram(): Command {
  const program = new Command('sluice')
    .description('Sluice rate-limiting tools')
    .version(version)
    .showHelpAfterError();
  // Subcommands: one line each.
  registerConfig(program);
  return program;
}

await createProgram().parseAsync(process.argv);
