import { flatArguments, hasMethod, type CommandArguments, type StoreClient } from './contract.js';

/** The members that mark a node-redis client (`createClient` of `redis` 4 and 5, or `@redis/client`). */
export interface NodeRedisLike {
  sendCommand: (...args: never[]) => unknown;
  readonly isOpen: boolean;
  readonly isReady: boolean;
}

/** The node-redis members the adapter uses. */
interface NodeRedisClient {
  sendCommand(args: string[], options?: object): Promise<unknown>;
  readonly isOpen: boolean;
  readonly isReady: boolean;
  readonly options?: { disableOfflineQueue?: boolean };
  on(event: 'ready' | 'end', listener: () => void): unknown;
  off(event: 'ready' | 'end', listener: () => void): unknown;
}

/** A node-redis client: `isOpen` and `isReady`, two booleans no other client has, beside `sendCommand`. */
export function isNodeRedis(value: object): value is NodeRedisLike {
  const candidate = value as Partial<NodeRedisLike>;
  return hasMethod(value, 'sendCommand') && typeof candidate.isOpen === 'boolean' && typeof candidate.isReady === 'boolean';
}

/**
 * A node-redis Cluster (`createCluster`): `isOpen` and the lists of its masters and slots, but no `isReady`.
 * Not supported yet: refused by name rather than taken for something else.
 */
export function isNodeRedisCluster(value: object): boolean {
  const candidate = value as { isOpen?: unknown; masters?: unknown; slots?: unknown };
  return hasMethod(value, 'sendCommand') && typeof candidate.isOpen === 'boolean' && 'masters' in value && 'slots' in value;
}

/**
 * Replies as node-redis decodes them by default, whatever type mapping the application gave its client (a RESP3
 * client may map numbers to strings or bigints): integers as numbers, strings as strings, on RESP2 and RESP3.
 * node-redis 4 ignores the option (it has no type mapping).
 */
const DEFAULT_TYPES = { typeMapping: {} };

export function nodeRedisClient(client: NodeRedisLike): StoreClient {
  const redis = client as unknown as NodeRedisClient;
  return {
    library: 'node-redis',
    cluster: false,
    send: (name: string, args: CommandArguments) => redis.sendCommand(flatArguments(name, args), DEFAULT_TYPES),
    // node-redis does not tell a first connection from a later one: open and not ready reads as reconnecting.
    // A client not opened (no connect() yet) or closed fails every command at once (ClientClosedError).
    state: () => (redis.isReady ? 'ready' : redis.isOpen ? 'reconnecting' : 'closed'),
    // By default node-redis queues a command sent while not ready and writes it when the connection is back.
    queuesOffline: () => redis.options?.disableOfflineQueue !== true,
    onStateChange(listener: () => void): () => void {
      redis.on('ready', listener);
      redis.on('end', listener);
      return () => {
        redis.off('ready', listener);
        redis.off('end', listener);
      };
    },
    // The application opens a node-redis client itself (`await client.connect()`).
    connect: () => undefined,
  };
}
