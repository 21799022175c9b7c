/**
 * The client contract: the little the Redis store needs from a client, whichever library the application holds.
 * Each file beside this one makes it from one library's client (ioredis, node-redis, Valkey GLIDE); the store,
 * its connection gate and its batcher know nothing else about the client.
 *
 * The store's commands, all sent through `send`: FCALL and FUNCTION LOAD (the limit script as a Redis Function),
 * EVALSHA with a fallback to EVAL on NOSCRIPT (the limit script elsewhere, and the lease script), and DEL (reset).
 * Redis TIME is read inside the script, so it is no command of its own. The config source's GET, SET, PUBLISH and
 * its subscriber connection are not part of the contract yet: `redisConfigSource` still takes an ioredis client.
 */

/**
 * Where the client's connection stands:
 * - `ready`: a command sent now is written to the socket;
 * - `connecting`: not connected yet (never was, or a lazy client not yet started);
 * - `reconnecting`: connected before, lost, trying again;
 * - `closed`: closed by the application; a command sent now fails at once.
 */
export type ConnectionState = 'ready' | 'connecting' | 'reconnecting' | 'closed';

/** A command's arguments; an array among them stands for its items, in place (a script call's keys, its args). */
export type CommandArguments = ReadonlyArray<string | number | readonly string[]>;

export interface StoreClient {
  /** The library, for messages: `ioredis`, `node-redis`, `valkey-glide`. */
  readonly library: string;
  /** A Redis Cluster client: a script call's keys must then share one hash slot, and Functions are not used. */
  readonly cluster: boolean;
  /**
   * Sends one command (`name` and its arguments) and resolves with its reply as plain values: integers as numbers,
   * bulk and simple strings as strings (UTF-8), nil as null, arrays as arrays, whatever the protocol (RESP2 or
   * RESP3). A server error rejects with an Error whose message starts with the server's error code, as Redis
   * sent it (`NOSCRIPT ...`, `ERR Function not found`), which is how the store tells a missing script from a
   * failed one.
   */
  send(name: string, args: CommandArguments): Promise<unknown>;
  /** The connection's state now. */
  state(): ConnectionState;
  /**
   * Whether a command sent while the state is not `ready` waits in the client's own queue, to be written whenever
   * the connection comes back (ioredis's offline queue, node-redis's). The store never lets one of its commands
   * wait there (see connection-gate.ts): when this is true it holds them itself while the client is not ready.
   */
  queuesOffline(): boolean;
  /** Calls `listener` whenever the state may have changed (to `ready` or `closed` at least); returns the undo. */
  onStateChange(listener: () => void): () => void;
  /** Starts connecting a client that was built not to connect by itself until used (ioredis `lazyConnect`). */
  connect(): void;
}

/** An array argument stands for its items: the flat list a client that does not flatten arguments needs. */
export function flatArguments(name: string, args: CommandArguments): string[] {
  const flat = [name];
  for (const arg of args) {
    if (typeof arg === 'string') flat.push(arg);
    else if (typeof arg === 'number') flat.push(String(arg));
    else for (const item of arg) flat.push(item);
  }
  return flat;
}

/** A value that is an object (or function) whose member `name` is a function. */
export function hasMethod(value: object, name: string): boolean {
  return typeof (value as Record<string, unknown>)[name] === 'function';
}
