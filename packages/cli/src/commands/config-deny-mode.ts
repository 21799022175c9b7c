/**
 * `sluice config deny mode <enforce|shadow|off>`: the deny list's own switch (core's `setDenyListMode`, `"denyMode"` in
 * the runtime configuration document), apart from the limiter's mode. The kill switch (`sluice config off`) turns off
 * limits, not the list; this turns the list off (`off`), has it report listed clients and serve them (`shadow`, a new
 * list's dark launch), or refuse them again (`enforce`). Exit codes: those of config-connection.ts (0, 1, 2).
 */
import { SluiceError } from '@sluice/core';
import { setDenyListMode } from '@sluice/core/config';
import type { Command } from 'commander';
import { fail, pickUp, run, withConnection, type ConnectionFlags } from './config-connection.js';

const MODES = ['enforce', 'shadow', 'off'] as const;

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
    if (!(MODES as readonly string[]).includes(mode)) {
      fail(new SluiceError('INVALID_OPTION', `<mode> must be enforce, shadow or off, got ${JSON.stringify(mode)}`));
      return;
    }
    return run(flags, true, async (connection) => {
      const written = await setDenyListMode(connection.source, flags.name, mode as (typeof MODES)[number]);
      process.stdout.write(`${JSON.stringify(written, null, 2)}\n`);
      process.stderr.write(
        `wrote revision ${written.revision} of ${JSON.stringify(flags.name)} (deny list ${mode}, ${written.mode === undefined ? "the code's mode" : `mode ${written.mode}`}) to ${connection.where}; ${pickUp(connection)}\n`,
      );
    });
  });
}
