/**
 * `sluice config`: reads and changes a limiter's runtime configuration in the shared store (core's
 * config-document.ts), which every instance running `watchConfig` applies without a restart. Each write goes
 * through core's writeLimiterConfig, so a rule is checked by the same factories as in code and a bad one is
 * refused before it is stored. Exit codes: 0 done, 1 the store failed (unreachable, refused, a stored document
 * that is not valid), 2 the command or its input is wrong.
 */
import { SluiceError, isSluiceError } from '@sluice/core';
import {
  deleteLimiterConfig,
  parseLimiterConfig,
  setConfigMode,
  setConfigRules,
  setQuota,
  removeQuota,
  type ConfigSource,
  type LimiterConfig,
  type RulesInput,
} from '@sluice/core/config';
import type { Command } from 'commander';

interface ConnectionFlags {
  name: string;
  redis?: string;
  upstashUrl?: string;
  upstashToken?: string;
  sqlite?: string;
  prefix?: string;
  cluster?: boolean;
}

/** What to connect to, and how to let go of it afterwards. */
interface Connection {
  source: ConfigSource;
  /** Where the document lives, for messages: `redis://127.0.0.1:6380 key sluice:config:api`. */
  where: string;
  /** Whether watchers hear of a write at once (Redis pub/sub) or at their next refresh. */
  pushes: boolean;
  close(): Promise<void>;
}

const RULES_EXAMPLE = `'[{"algorithm":"gcra","limit":10,"period":"1s"}]'`;

export function registerConfig(program: Command): void {
  const config = program
    .command('config')
    .description("Read and change a limiter's rules, mode and per-identity quotas in the shared store (applied by watchConfig)")
    // Usage errors (a missing flag, an unknown command) exit 2 like a bad rule; commander would exit 1.
    .exitOverride((error) => process.exit(error.exitCode === 0 ? 0 : 2));

  withConnection(config.command('get').description('Print the stored configuration as JSON (null when none is stored)')).action(
    (flags: ConnectionFlags) =>
      run(flags, false, async ({ source }) => {
        const text = await source.read(flags.name);
        if (text === undefined || text === null) {
          process.stdout.write('null\n');
          process.stderr.write(
            `no configuration is stored for ${JSON.stringify(flags.name)}: instances use the rules and mode in their code\n`,
          );
          return;
        }
        let document: LimiterConfig;
        try {
          document = parseLimiterConfig(text);
        } catch (error) {
          process.stdout.write(`${text}\n`);
          throw new SluiceError(
            'STORE_ERROR',
            `the stored configuration of ${JSON.stringify(flags.name)} is not valid, so instances ignore it and keep their last good one: ${messageOf(error)}; write a good one (sluice config set ...) or delete it (sluice config clear)`,
          );
        }
        process.stdout.write(`${JSON.stringify(document, null, 2)}\n`);
      }),
  );

  withConnection(config.command('set').description('Set the rules every instance uses (JSON rule specs)'))
    .requiredOption('--rules <json>', `the rules, e.g. ${RULES_EXAMPLE}`)
    .action((flags: ConnectionFlags & { rules: string }) =>
      run(flags, true, (connection) =>
        report(connection, flags.name, setConfigRules(connection.source, flags.name, parseRules(flags.rules, '--rules'))),
      ),
    );

  const modes: Array<[string, 'enforce' | 'shadow' | 'off', string]> = [
    ['off', 'off', 'Kill switch: every instance allows everything and counts nothing'],
    ['shadow', 'shadow', 'Dark launch: count and report what would be refused, refuse nothing'],
    ['on', 'enforce', 'Enforce the rules again (mode enforce)'],
  ];
  for (const [command, mode, description] of modes) {
    withConnection(config.command(command).description(description)).action((flags: ConnectionFlags) =>
      run(flags, true, (connection) => report(connection, flags.name, setConfigMode(connection.source, flags.name, mode))),
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
}

/** The flags every subcommand takes: which limiter, and where its configuration is kept. */
function withConnection(command: Command): Command {
  return command
    .requiredOption('--name <name>', "the limiter's name (its `name` option)")
    .option('--redis <url>', 'Redis URL, e.g. redis://127.0.0.1:6379 (rediss:// for TLS)')
    .option('--cluster', 'the --redis URL is one node of a Redis Cluster')
    .option('--upstash-url <url>', 'Upstash REST URL (default: $UPSTASH_REDIS_REST_URL)')
    .option('--upstash-token <token>', 'Upstash REST token (default: $UPSTASH_REDIS_REST_TOKEN)')
    .option('--sqlite <file>', 'SQLite database file shared by the instances')
    .option('--prefix <prefix>', 'key prefix of redisConfigSource / upstashConfigSource (default: sluice)');
}

/** Connects, runs, reports a failure as one line on stderr with its exit code, and always disconnects. */
async function run(flags: ConnectionFlags, writes: boolean, action: (connection: Connection) => Promise<void>): Promise<void> {
  let connection: Connection | undefined;
  try {
    connection = await connect(flags, writes);
    await action(connection);
  } catch (error) {
    process.stderr.write(`sluice config: ${messageOf(error)}\n`);
    process.exitCode = isSluiceError(error) && (error.code === 'INVALID_OPTION' || error.code === 'UNKNOWN_OPTION') ? 2 : 1;
  } finally {
    await connection?.close().catch(() => {});
  }
}

async function report(connection: Connection, name: string, written: Promise<LimiterConfig>): Promise<void> {
  const document = await written;
  process.stdout.write(`${JSON.stringify(document, null, 2)}\n`);
  const mode = document.mode === undefined ? "the code's mode" : `mode ${document.mode}`;
  process.stderr.write(
    `wrote revision ${document.revision} of ${JSON.stringify(name)} (${mode}) to ${connection.where}; ${pickUp(connection)}\n`,
  );
}

function pickUp(connection: Connection): string {
  return connection.pushes
    ? 'watching instances are told at once (pub/sub), and read it at their next refresh otherwise'
    : 'watching instances read it at their next refresh (1 s by default)';
}

function parseRules(text: string, field: string): RulesInput {
  try {
    return JSON.parse(text) as RulesInput;
  } catch (error) {
    throw new SluiceError(
      'INVALID_OPTION',
      `${field} must be JSON rule specs such as ${RULES_EXAMPLE}, got text that is not JSON (${messageOf(error)})`,
    );
  }
}

async function connect(flags: ConnectionFlags, writes: boolean): Promise<Connection> {
  const upstashUrl = flags.upstashUrl ?? process.env.UPSTASH_REDIS_REST_URL;
  const upstashToken = flags.upstashToken ?? process.env.UPSTASH_REDIS_REST_TOKEN;
  const given = [
    flags.redis !== undefined && '--redis',
    flags.sqlite !== undefined && '--sqlite',
    (flags.upstashUrl !== undefined || flags.upstashToken !== undefined) && '--upstash-url',
  ].filter(Boolean);
  if (given.length > 1) throw new SluiceError('INVALID_OPTION', `give one store, got ${given.join(' and ')}`);
  const prefix = flags.prefix === undefined ? {} : { prefix: flags.prefix };
  if (flags.cluster === true && flags.redis === undefined)
    throw new SluiceError('INVALID_OPTION', "--cluster needs --redis <url> of one of the Cluster's nodes");
  if (flags.redis !== undefined) return connectRedis(flags.redis, flags.name, prefix, flags.cluster === true);
  if (flags.sqlite !== undefined) {
    if (flags.prefix !== undefined)
      throw new SluiceError('INVALID_OPTION', '--prefix applies to Redis and Upstash; SQLite keeps the configuration in its own table');
    return connectSqlite(flags.sqlite, writes);
  }
  if (upstashUrl !== undefined || upstashToken !== undefined) {
    if (upstashUrl === undefined || upstashToken === undefined) {
      throw new SluiceError(
        'INVALID_OPTION',
        `Upstash needs both --upstash-url and --upstash-token (or $UPSTASH_REDIS_REST_URL and $UPSTASH_REDIS_REST_TOKEN); ${upstashUrl === undefined ? 'the URL' : 'the token'} is missing`,
      );
    }
    return connectUpstash(upstashUrl, upstashToken, prefix);
  }
  throw new SluiceError(
    'INVALID_OPTION',
    'say where the configuration is kept: --redis <url>, --upstash-url <url> with --upstash-token <token> (or their environment variables), or --sqlite <file>',
  );
}

async function connectRedis(url: string, name: string, options: { prefix?: string }, cluster: boolean): Promise<Connection> {
  if (!/^rediss?:\/\//.test(url))
    throw new SluiceError('INVALID_OPTION', `--redis must be a URL such as redis://127.0.0.1:6379, got ${JSON.stringify(url)}`);
  const [{ Redis, Cluster }, { redisConfigSource }] = await Promise.all([import('ioredis'), import('@sluice/redis')]);
  // One attempt, no offline queue, no reconnection: a CLI reports an unreachable store at once, it does not wait.
  const once = { enableOfflineQueue: false, maxRetriesPerRequest: 0, connectTimeout: 5_000 };
  let client: InstanceType<typeof Redis> | InstanceType<typeof Cluster>;
  if (cluster) {
    const { hostname, port, username, password, protocol } = new URL(url);
    const node = { host: hostname, port: Number(port || 6379) };
    const auth = { username: decodeURIComponent(username) || undefined, password: decodeURIComponent(password) || undefined };
    client = new Cluster([node], {
      lazyConnect: true,
      enableOfflineQueue: false,
      clusterRetryStrategy: () => null,
      redisOptions: { ...once, ...auth, ...(protocol === 'rediss:' ? { tls: {} } : {}) },
    });
  } else {
    client = new Redis(url, { ...once, lazyConnect: true, retryStrategy: () => null });
  }
  // connect() rejects with "Connection is closed"; the socket's own error (ECONNREFUSED ...) says more.
  let socketError: unknown;
  client.on('error', (error: unknown) => void (socketError ??= error));
  try {
    await client.connect();
  } catch (error) {
    client.disconnect();
    throw new SluiceError(
      'STORE_ERROR',
      `could not connect to Redis${cluster ? ' Cluster' : ''} at ${redact(url)}: ${messageOf(socketError ?? error)}`,
      { cause: socketError ?? error },
    );
  }
  const source = redisConfigSource(client, options);
  return { source, where: `${redact(url)} (key ${source.key(name)})`, pushes: true, close: async () => void (await client.quit()) };
}

async function connectUpstash(url: string, token: string, options: { prefix?: string }): Promise<Connection> {
  const [{ Redis }, { upstashConfigSource }] = await Promise.all([import('@upstash/redis'), import('@sluice/upstash')]);
  const client = new Redis({ url, token, enableTelemetry: false, retry: { retries: 1 } });
  return { source: upstashConfigSource(client, options), where: url, pushes: false, close: async () => {} };
}

async function connectSqlite(file: string, writes: boolean): Promise<Connection> {
  const [{ default: Database }, { sqliteConfigSource }] = await Promise.all([import('better-sqlite3'), import('@sluice/sqlite')]);
  let db;
  try {
    // Reading never creates a file: a mistyped path is an error, not an empty database.
    db = new Database(file, { fileMustExist: !writes });
  } catch (error) {
    throw new SluiceError('STORE_ERROR', `could not open the SQLite file ${JSON.stringify(file)}: ${messageOf(error)}`, { cause: error });
  }
  const opened = db;
  return { source: sqliteConfigSource(opened), where: file, pushes: false, close: async () => void opened.close() };
}

/** A URL without its password, for messages. */
function redact(url: string): string {
  return url.replace(/\/\/([^:@/]*):[^@/]*@/, '//$1:***@');
}

function messageOf(error: unknown): string {
  return isSluiceError(error) ? error.detail : error instanceof Error ? error.message : String(error);
}
