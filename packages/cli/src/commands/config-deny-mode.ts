/**
 * `sluice config deny mode <enforce|shadow|off>`: the deny list's own switch (core's `setDenyListMode`, `"denyMode"` in
 * the runtime configuration document), apart from the limiter's mode. The kill switch (`sluice config off`) turns off
 * limits, not the list; this turns the list off (`off`), has it report listed clients and serve them (`shadow`, a new
 * list's dark launch), or refuse them again (`enforce`). Exit codes: those of config-connection.ts (0, 1, 2).
 */
import type { LimiterMode } from '@sluice/core';
import { setDenyListMode } from '@sluice/core/config';
import { MODES, modeOption } from '@sluice/core/internal';
import type { Command } from 'commander';
import { fail, pickUp, run, withConnection, type ConnectionFlags } from './config-connection.js';

/** Adds `mode` to `sluice config deny` (made by config-deny.ts). */
export function registerDenyMode(deny: Command): void {
  withConnection(
    deny
      .command('mode')
      .description(
        "Set the deny list's own mode: enforce (403), shadow (report to onDenied and serve), off (ignore the list); the limiter's mode does not change it",
      )
      .argument('<mode>', MODES.join(', ')),
  ).action((mode: string, flags: ConnectionFlags) => {
    const denyMode = readMode(mode);
    if (denyMode === undefined) return;
    return run(flags, true, async (connection) => {
      const written = await setDenyListMode(connection.source, flags.name, denyMode);
      process.stdout.write(`${JSON.stringify(written, null, 2)}\n`);
      process.stderr.write(
        `wrote revision ${written.revision} of ${JSON.stringify(flags.name)} (deny list ${mode}, ${written.mode === undefined ? "the code's mode" : `mode ${written.mode}`}) to ${connection.where}; ${pickUp(connection)}\n`,
      );
    });
  });
}

/** The mode argument, or undefined when it is not one (the error is reported, exit code 2). */
function readMode(mode: string): LimiterMode | undefined {
  try {
    return modeOption(mode, '<mode>');
  } catch (error) {
    fail(error);
    return undefined;
  }
}
