/**
 * How every `sluice config` command reaches the store that holds the runtime configuration: the connection flags
 * (one of Redis, Upstash or SQLite), opening and closing the client, and the one place a failure becomes a line on
 * stderr and an exit code: 1 the store failed (unreachable, refused, a stored document that is not valid), 2 the
 * command or its input is wrong.
 */
import { SluiceError, isSluiceError } from '@sluice/core';
import type { ConfigSource } from '@sluice/core/config';
import type { Redis as UpstashRedis } from '@upstash/redis';
import type { Database } from 'better-sqlite3';
import type { Command } from 'commander';
import type { Cluster, Redis } from 'ioredis';

/** The flags that say where the configuration is kept (every `sluice config` command adds `--name`). */
export interface StoreFlags {
  redis?: string;
  upstashUrl?: string;
  upstashToken?: string;
  sqlite?: string;
  prefix?: string;
  cluster?: boolean;
}

export interface ConnectionFlags extends StoreFlags {
  name: string;
}

/** The client a Connection holds, for a caller that reads more than the configuration from the same store. */
export type StoreClient =
  | { kind: 'redis'; client: Redis | Cluster; prefix: string | undefined }
  | { kind: 'upstash'; client: UpstashRedis; prefix: string | undefined }
  | { kind: 'sqlite'; db: Database };

/** How to connect: whether the command writes (SQLite may then create the file), whether the connection lives on. */
export interface ConnectOptions {
  writes: boolean;
  /**
   * A long-lived connection (`sluice dashboard`) reconnects to Redis after a failure (backing off to 1 s) and gives a
   * command at most `commandTimeoutMs`; a one-shot command fails at once instead.
   * @default false
   */
  reconnect?: boolean;
}

/** What to connect to, and how to let go of it afterwards. */
export interface Connection {
  source: ConfigSource;
  /** Where the document lives, for messages: `redis://127.0.0.1:6380 (key sluice:config:api)`. */
  where: string;
  /**
   * Where the deny list lives, for messages: beside the document in a structure of its own where the source has one
   * (`redis://127.0.0.1:6380 (key sluice:deny:{api})`), else the document's place.
   */
  denyWhere: string;
  /** Whether watchers hear of a write at once (Redis pub/sub) or at their next refresh. */
  pushes: boolean;
  store: StoreClient;
  close(): Promise<void>;
}

/** The flags every subcommand takes: which limiter, and where its configuration is kept. */
export function withConnection(command: Command): Command {
  return withStore(command.requiredOption('--name <name>', "the limiter's name (its `name` option)"));
}

/** The flags that say where the configuration is kept: one of Redis, Upstash or SQLite. */
export function withStore(command: Command): Command {
  return command
    .option('--redis <url>', 'Redis URL, e.g. redis://127.0.0.1:6379 (rediss:// for TLS)')
    .option('--cluster', 'the --redis URL is one node of a Redis Cluster')
    .option('--upstash-url <url>', 'Upstash REST URL (default: $UPSTASH_REDIS_REST_URL)')
    .option('--upstash-token <token>', 'Upstash REST token (default: $UPSTASH_REDIS_REST_TOKEN)')
    .option('--sqlite <file>', 'SQLite database file shared by the instances')
    .option('--prefix <prefix>', 'key prefix of redisConfigSource / upstashConfigSource (default: sluice)');
}

/** Connects, runs, reports a failure as one line on stderr with its exit code, and always disconnects. */
export async function run(flags: ConnectionFlags, writes: boolean, action: (connection: Connection) => Promise<void>): Promise<void> {
  let connection: Connection | undefined;
  try {
    connection = await connect(flags, { writes });
    await action(connection);
  } catch (error) {
    fail(error);
  } finally {
    await connection?.close().catch(() => {});
  }
  endWhenFlushed();
}

/**
 * Ends a one-shot command once what it wrote is flushed. After a reply of megabytes (a deny list of 100,000 entries)
 * ioredis's reply parser keeps an interval running that shrinks its buffer pool by a tenth every 50 ms, which held
 * the process open for about 2.7 s after the command was done.
 */
function endWhenFlushed(): void {
  process.stdout.write('', () => process.stderr.write('', () => process.exit()));
}

/** Reports a failure as one line on stderr and sets the exit code: 2 for a wrong input, 1 for anything else. */
export function fail(error: unknown, command = 'sluice config'): void {
  process.stderr.write(`${command}: ${messageOf(error)}\n`);
  process.exitCode = isSluiceError(error) && (error.code === 'INVALID_OPTION' || error.code === 'UNKNOWN_OPTION') ? 2 : 1;
}

export function pickUp(connection: Connection): string {
  return connection.pushes
    ? 'watching instances are told at once (pub/sub), and read it at their next refresh otherwise'
    : 'watching instances read it at their next refresh (1 s by default)';
}

/** Opens the store the flags name; the caller closes it. A wrong flag throws INVALID_OPTION, an unreachable store STORE_ERROR. */
export async function connect(flags: StoreFlags & { name?: string }, options: ConnectOptions): Promise<Connection> {
  const { writes, reconnect = false } = options;
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
  if (flags.redis !== undefined) return connectRedis(flags.redis, flags.name, prefix, { cluster: flags.cluster === true, reconnect });
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

/** Backoff of a long-lived connection between reconnection attempts, ms. */
const RECONNECT_MAX_MS = 1_000;
/** A long-lived connection's bound on one command: a stopped server answers 503 instead of hanging the page. */
const COMMAND_TIMEOUT_MS = 2_000;

async function connectRedis(
  url: string,
  name: string | undefined,
  options: { prefix?: string },
  { cluster, reconnect }: { cluster: boolean; reconnect: boolean },
): Promise<Connection> {
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
  if (reconnect) {
    // Connected once (so a wrong URL still fails at once); from now on a lost server is retried until it is back,
    // and meanwhile every command fails at once (no offline queue) or after COMMAND_TIMEOUT_MS.
    const retry = (times: number) => Math.min(times * 100, RECONNECT_MAX_MS);
    if (cluster) Object.assign((client as InstanceType<typeof Cluster>).options, { clusterRetryStrategy: retry });
    else Object.assign((client as InstanceType<typeof Redis>).options, { retryStrategy: retry, commandTimeout: COMMAND_TIMEOUT_MS });
  }
  const source = redisConfigSource(client, options);
  const where = name === undefined ? redact(url) : `${redact(url)} (key ${source.key(name)})`;
  // The entries' key, as @sluice/redis documents it; its :meta and :log keys sit beside it.
  const denyKey = `${options.prefix ?? 'sluice'}:deny:{${name}}`;
  return {
    source,
    where,
    denyWhere: name === undefined || source.deny === undefined ? where : `${redact(url)} (key ${denyKey})`,
    pushes: true,
    store: { kind: 'redis', client, prefix: options.prefix },
    close: async () => void (await client.quit().catch(() => client.disconnect())),
  };
}

async function connectUpstash(url: string, token: string, options: { prefix?: string }): Promise<Connection> {
  const [{ Redis }, { upstashConfigSource }] = await Promise.all([import('@upstash/redis'), import('@sluice/upstash')]);
  const client = new Redis({ url, token, enableTelemetry: false, retry: { retries: 1 } });
  return {
    source: upstashConfigSource(client, options),
    where: url,
    denyWhere: url,
    pushes: false,
    store: { kind: 'upstash', client, prefix: options.prefix },
    close: async () => {},
  };
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
  return {
    source: sqliteConfigSource(opened),
    where: file,
    denyWhere: file,
    pushes: false,
    store: { kind: 'sqlite', db: opened },
    close: async () => void opened.close(),
  };
}

/** A URL without its password, for messages. */
function redact(url: string): string {
  return url.replace(/\/\/([^:@/]*):[^@/]*@/, '//$1:***@');
}

export function messageOf(error: unknown): string {
  return isSluiceError(error) ? error.detail : error instanceof Error ? error.message : String(error);
}
