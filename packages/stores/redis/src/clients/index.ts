import { SluiceError } from '@sluice/core';
import { describeValue } from '@sluice/core/internal';
import type { StoreClient } from './contract.js';
import { ioredisClient, isIoredis } from './ioredis.js';
import { isNodeRedis, isNodeRedisCluster, nodeRedisClient } from './node-redis.js';
import { glideClient, isGlide, isGlideCluster } from './valkey-glide.js';

export type { ConnectionState, StoreClient } from './contract.js';

/**
 * A client `redisStore` accepts: an ioredis `Redis` or `Cluster`, a node-redis client (`createClient`), or a
 * Valkey GLIDE `GlideClient`. Described by the members the store recognises each by, so that no client library's
 * types are needed to use the others.
 */
export type RedisClient =
  | {
      /** ioredis */
      sendCommand: (...args: never[]) => unknown;
      evalsha: (...args: never[]) => unknown;
      eval: (...args: never[]) => unknown;
      del: (...args: never[]) => unknown;
    }
  | {
      /** node-redis */
      sendCommand: (...args: never[]) => unknown;
      readonly isOpen: boolean;
      readonly isReady: boolean;
    }
  | {
      /** Valkey GLIDE */
      customCommand: (...args: never[]) => unknown;
      invokeScript: (...args: never[]) => unknown;
    };

const ACCEPTED =
  'an ioredis Redis or Cluster (redisStore(new Redis())), a node-redis client (createClient(), then await client.connect()) or a Valkey GLIDE GlideClient (redisStore(await GlideClient.createClient(...)))';

/**
 * The contract made from the application's client, told apart by duck typing on members each library documents
 * (see the README for why not `instanceof`): GLIDE's `customCommand` and `invokeScript`, node-redis's `isOpen`
 * and `isReady` booleans, then ioredis's `sendCommand` beside `evalsha`. GLIDE and node-redis come first: their
 * members are their own, while ioredis's were the store's whole test before and are kept as they were.
 */
export function storeClient(client: unknown, where: string): StoreClient {
  if (typeof client === 'object' && client !== null) {
    if (isGlide(client)) {
      if (isGlideCluster(client)) throw unsupported(where, 'a Valkey GLIDE GlideClusterClient');
      return glideClient(client);
    }
    if (isNodeRedisCluster(client)) throw unsupported(where, 'a node-redis Cluster (createCluster)');
    if (isNodeRedis(client)) return nodeRedisClient(client);
    if (isIoredis(client)) return ioredisClient(client);
  }
  throw new SluiceError(
    'INVALID_OPTION',
    `${where}: client must be an ioredis Redis or Cluster, a node-redis client or a Valkey GLIDE client: ${ACCEPTED}; got ${describeValue(client)}`,
  );
}

function unsupported(where: string, what: string): SluiceError {
  return new SluiceError('INVALID_OPTION', `${where}: ${what} is not supported yet; accepted: ${ACCEPTED}`);
}
