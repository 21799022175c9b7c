/**
 * The config source tests' servers: one redis-server and one Cluster of three masters, started for a file, and the
 * clients it opens on them, each disconnected when the file is done.
 */
import { afterAll, beforeAll } from 'vitest';
import { Cluster, Redis } from 'ioredis';
import { startCluster, startRedis, type RedisCluster, type RedisServer } from '../../../../test/harness/redis.js';

export interface TestServers {
  /** The standalone server (started by the file's beforeAll). */
  readonly server: () => RedisServer;
  /** A new client of the standalone server; its reconnect errors are expected (tests kill the server). */
  connect(): Redis;
  /** A new Cluster client, once it is ready. */
  connectCluster(): Promise<Cluster>;
}

/** Registers the file's beforeAll and afterAll: both servers started at once, every client closed, both stopped. */
export function useServers(): TestServers {
  let server: RedisServer | undefined;
  let cluster: RedisCluster | undefined;
  const clients: Array<Redis | Cluster> = [];
  beforeAll(async () => {
    [server, cluster] = await Promise.all([startRedis(), startCluster()]);
  }, 60_000);
  afterAll(async () => {
    for (const client of clients) client.disconnect();
    await Promise.all([server?.stop(), cluster?.stop()]);
  });
  const started = <T>(value: T | undefined): T => {
    if (value === undefined) throw new Error('the servers start in beforeAll: connect from a test or a later hook');
    return value;
  };
  return {
    server: () => started(server),
    connect() {
      const { host, port } = started(server);
      const client = new Redis({ host, port });
      client.on('error', () => {});
      clients.push(client);
      return client;
    },
    async connectCluster() {
      const client = new Cluster([...started(cluster).nodes]);
      clients.push(client);
      await new Promise<void>((resolve, reject) => {
        client.once('ready', () => resolve());
        client.once('error', reject);
      });
      return client;
    },
  };
}
