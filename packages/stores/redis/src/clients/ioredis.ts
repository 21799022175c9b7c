import { hasMethod, type CommandArguments, type ConnectionState, type StoreClient } from './contract.js';

/** ioredis's Command class: what its `sendCommand` takes. */
type CommandClass = new (
  name: string,
  args: Array<string | number>,
  options: { replyEncoding: 'utf8'; keyPrefix?: string; errorStack?: Error },
) => object;

/** The ioredis members the adapter uses; `Redis` and `Cluster` (ioredis 5 and 6) both have them. */
interface IoredisClient {
  sendCommand(command: object): unknown;
  call(name: string, ...args: CommandArguments): Promise<unknown>;
  readonly status?: string;
  readonly isCluster?: boolean;
  readonly options?: { keyPrefix?: string; showFriendlyErrorStack?: boolean; enableOfflineQueue?: boolean };
  connect?(): Promise<void>;
  on(event: 'ready' | 'end', listener: () => void): unknown;
  off(event: 'ready' | 'end', listener: () => void): unknown;
}

/** The members that mark an ioredis client (public and stable since ioredis 4). */
export interface IoredisLike {
  sendCommand: (...args: never[]) => unknown;
  evalsha: (...args: never[]) => unknown;
  eval: (...args: never[]) => unknown;
  del: (...args: never[]) => unknown;
}

/**
 * An ioredis `Redis` or `Cluster`: the members the store has always used (`sendCommand` with the methods of
 * commands beside it) and no node-redis or GLIDE marker. Checked after those two (see clients/index.ts).
 */
export function isIoredis(value: object): value is IoredisLike {
  return hasMethod(value, 'sendCommand') && hasMethod(value, 'evalsha') && hasMethod(value, 'eval') && hasMethod(value, 'del');
}

/** ioredis's `status` as the contract's state: `wait` is a lazy client never started, `close` is between attempts. */
const STATES: Record<string, ConnectionState> = {
  ready: 'ready',
  end: 'closed',
  wait: 'connecting',
  connecting: 'connecting',
  connect: 'connecting',
  reconnecting: 'reconnecting',
  close: 'reconnecting',
};

/**
 * How the adapter builds a command with ioredis's Command class, without importing ioredis (an optional peer
 * dependency) where it can: the class must be the one of the very copy the client came from (ioredis 6's
 * `sendCommand` needs its own Command).
 * - ioredis 5's `Redis` carries it as the static `Redis.Command` (`client.constructor`);
 * - without auto-pipelining, `client.call` builds exactly that Command itself, with the same options (ioredis 6's
 *   `Redis`, whose prototype's `constructor` is EventEmitter's, and a `Cluster`, which has no static Command);
 * - otherwise the ioredis this package resolves is imported once, which is what the store did before it took
 *   other clients (a static `import { Command } from 'ioredis'`).
 */
let imported: Promise<CommandClass> | undefined;
function commandClass(client: object): CommandClass | 'call' | Promise<CommandClass> {
  const own = (client.constructor as { Command?: CommandClass } | undefined)?.Command;
  if (typeof own === 'function') return own;
  const options = (client as { options?: { enableAutoPipelining?: boolean } }).options;
  if (options?.enableAutoPipelining !== true && hasMethod(client, 'call')) return 'call';
  imported ??= import('ioredis').then((module) => module.Command as unknown as CommandClass);
  return imported;
}

export function ioredisClient(client: IoredisLike): StoreClient {
  const io = client as unknown as IoredisClient;
  let Command = commandClass(client);
  if (typeof Command === 'object')
    void Command.then(
      (found) => (Command = found),
      () => undefined,
    );
  return {
    library: 'ioredis',
    cluster: io.isCluster === true,
    /**
     * Sends one command the way ioredis's own methods do (the client's key prefix, its friendly error stacks,
     * UTF-8 replies), but never through its auto-pipelining: a script call already carries every decision of the
     * tick, and wrapping it in an automatic pipeline cost about 1.4 µs of CPU per decision (measured with 64 in
     * flight). Arrays in `args` are flattened one level by ioredis's Command.
     */
    send(name: string, args: CommandArguments): Promise<unknown> {
      if (Command === 'call') return io.call(name, ...args);
      if (typeof Command !== 'function') return Command.then(() => this.send(name, args));
      const options = io.options;
      const command = new Command(name, args as Array<string | number>, {
        replyEncoding: 'utf8',
        keyPrefix: options?.keyPrefix,
        errorStack: options?.showFriendlyErrorStack === true ? new Error() : undefined,
      });
      return io.sendCommand(command) as Promise<unknown>;
    },
    // A client without a status (not ioredis's own) is taken as connected: its commands go straight to it.
    state: () => (io.status === undefined ? 'ready' : (STATES[io.status] ?? 'connecting')),
    queuesOffline: () => io.options?.enableOfflineQueue !== false,
    onStateChange(listener: () => void): () => void {
      io.on('ready', listener);
      io.on('end', listener);
      return () => {
        io.off('ready', listener);
        io.off('end', listener);
      };
    },
    connect(): void {
      // lazyConnect: started as ioredis's own first command would; errors reach the client's listeners.
      if (io.status === 'wait') io.connect?.().catch(() => undefined);
    },
  };
}
