/**
 * `sluice dashboard`: serves a live page of the fleet (dashboard/page.ts) on node:http (dashboard/server.ts, where
 * the security model is): each limiter's decisions per second over the last 15 minutes, as the instances'
 * `createFleetAnalytics` publish them to the store, the identities limited most in the last minute, and the stored
 * configuration, with buttons and forms that change it through core's writers, as `sluice config` does. It runs
 * until stopped (Ctrl-C). Exit codes: 1 the store could not be reached at start, 2 a wrong flag.
 */
import { randomBytes } from 'node:crypto';
import { SluiceError } from '@sluice/core';
import type { Command } from 'commander';
import { configNameLister, openAnalytics } from '../dashboard/analytics.js';
import { FleetView } from '../dashboard/fleet-view.js';
import { isLoopback, startDashboardServer } from '../dashboard/server.js';
import { connect, fail, withStore, type Connection, type StoreFlags } from './config-connection.js';

interface DashboardFlags extends StoreFlags {
  host: string;
  port: string;
  token?: string;
}

export function registerDashboard(program: Command): void {
  withStore(
    program
      .command('dashboard')
      .description(
        'Serve a live page of the fleet: decisions per second, the identities limited most, the configuration, and changes to it',
      ),
  )
    .option('--host <host>', 'address to listen on; anything but loopback requires a token', '127.0.0.1')
    .option('--port <port>', 'port to listen on (0: a free one, printed)', '0')
    .option('--token <token>', 'require this token on every request (made up and printed when --host is not loopback)')
    .exitOverride((error) => process.exit(error.exitCode === 0 ? 0 : 2))
    .action((flags: DashboardFlags) => serve(flags));
}

async function serve(flags: DashboardFlags): Promise<void> {
  let connection: Connection | undefined;
  try {
    const port = Number(flags.port);
    if (!/^\d+$/.test(flags.port) || port > 65_535)
      throw new SluiceError('INVALID_OPTION', `--port must be 0 to 65535, got ${JSON.stringify(flags.port)}`);
    if (flags.token !== undefined && flags.token.length < 16) {
      throw new SluiceError('INVALID_OPTION', '--token must be at least 16 characters (leave it out off loopback and one is made)');
    }
    const token = flags.token ?? (isLoopback(flags.host) ? undefined : randomBytes(24).toString('base64url'));
    // writes: false, as the file is the fleet's: a mistyped --sqlite path is an error, not a new empty database.
    connection = await connect(flags, { writes: false, reconnect: true });
    const view = new FleetView({
      source: connection.source,
      analytics: await openAnalytics(connection.store),
      listConfigNames: configNameLister(connection.store),
    });
    const { store, where } = connection;
    const storeDown =
      store.kind === 'redis'
        ? (error: unknown) =>
            // A socket that has just closed fails a command before ioredis leaves 'ready' (seen on Node 22 and 24).
            store.client.status === 'ready' && !LOST_CONNECTION.test(messageOfError(error))
              ? undefined
              : `the connection to Redis at ${where} is down; reconnecting every second (status: ${store.client.status})`
        : undefined;
    const server = await startDashboardServer({ view, host: flags.host, port, token, where, storeDown });
    process.stdout.write(`${server.url}\n`);
    process.stderr.write(
      `sluice dashboard: serving the fleet on ${connection.where} at ${server.url}${token === undefined ? ' (loopback only, no token)' : ' (token required)'}; Ctrl-C stops it\n`,
    );
    const opened = connection;
    const stop = () => {
      void server
        .close()
        .then(() => opened.close())
        .finally(() => process.exit(0));
    };
    process.once('SIGINT', stop);
    process.once('SIGTERM', stop);
  } catch (error) {
    await connection?.close().catch(() => {});
    fail(error, 'sluice dashboard');
  }
}

/** ioredis's messages for a command sent on a connection that is gone. */
const LOST_CONNECTION = /Stream isn't writeable|Connection is closed|ECONNREFUSED|ECONNRESET|EPIPE/;

function messageOfError(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
