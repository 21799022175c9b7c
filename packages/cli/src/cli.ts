import { isSluiceError } from '@sluice/core';
import { Command } from 'commander';
import { registerConfig } from './commands/config.js';
import { registerDashboard } from './commands/dashboard.js';
import { createRequire } from 'node:module';
import { registerGenerateLogs } from './commands/generate-logs.js';
import { registerTune } from './commands/tune.js';

// The version comes from package.json at run time so the binary never reports a stale one.
const require = createRequire(import.meta.url);
const { version } = require('../package.json') as { version: string };

/** Builds the `sluice` program. Each subcommand registers itself in one line below. */
export function createProgram(): Command {
  const program = new Command('sluice').description('Sluice rate-limiting tools').version(version).showHelpAfterError();
  // Subcommands: one line each.
  registerConfig(program);
  registerDashboard(program);
  registerTune(program);
  registerGenerateLogs(program);
  return program;
}

try {
  await createProgram().parseAsync(process.argv);
} catch (error) {
  // A bad flag or input is the user's to fix: say what, without a stack trace. Anything else is a bug: show it all.
  if (!isSluiceError(error)) throw error;
  process.stderr.write(`sluice: ${error.detail}\n`);
  process.exitCode = 2;
}
