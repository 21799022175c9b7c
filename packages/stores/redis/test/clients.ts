/**
 * The clients the store's suites run on: ioredis, node-redis 5 (RESP2 and RESP3), node-redis 4 and Valkey GLIDE,
 * each opened on a test's own redis-server with the library's defaults. Beside the client the store gets, each
 * gives the test two ways to talk to the server through that same library: one command, and an atomic block
 * (MULTI/EXEC), with the replies as the library hands them over.
 */
import { Redis } from 'ioredis';
import { createClient } from 'redis';
import { createClient as createClientV4 } from 'redis-v4';
import { Batch, GlideClient, Logger } from '@valkey/valkey-glide';
import type { RedisClient } from '../src/index.js';

export interface Address {
  readonly host: string;
  readonly port: number;
}

export interface OpenClient {
  /** What the application would hand to redisStore. */
  readonly client: RedisClient;
  /** One command through the same client. */
  command(args: string[]): Promise<unknown>;
  /** Commands in one MULTI/EXEC through the same client; each reply, or rejects if any failed. */
  atomic(commands: string[][]): Promise<unknown[]>;
  close(): Promise<void>;
}

export interface ClientKind {
  readonly name: string;
  /** The name as letters, digits and '-', for limiter names and keys. */
  readonly id: string;
  /** The library's name as the store's messages give it. */
  readonly library: 'ioredis' | 'node-redis' | 'valkey-glide';
  /** Opens a client and resolves once it is connected. */
  open(address: Address, options?: { requestTimeout?: number }): Promise<OpenClient>;
}

// GLIDE logs every server error at WARN (a NOSCRIPT after a restart, an unknown command): only errors here.
Logger.setLoggerConfig('error');

const ioredis: ClientKind = {
  name: 'ioredis',
  id: 'ioredis',
  library: 'ioredis',
  async open({ host, port }) {
    const client = new Redis({ host, port });
    client.on('error', () => {}); // reconnect errors are expected: tests kill the server
    await new Promise<void>((resolve) => client.once('ready', () => resolve()));
    return {
      client,
      command: ([name, ...args]) => client.call(name!, ...args),
      async atomic(commands) {
        const results = (await client.multi(commands.map(([name, ...args]) => ['call', name!, ...args])).exec())!;
        for (const [error] of results) if (error !== null) throw error;
        return results.map(([, value]) => value);
      },
      close: async () => client.disconnect(),
    };
  },
};

type NodeRedisClient = ReturnType<typeof createClient>;

function nodeRedis(name: string, id: string, make: (address: Address) => NodeRedisClient): ClientKind {
  return {
    name,
    id,
    library: 'node-redis',
    async open(address) {
      const client = make(address);
      client.on('error', () => {}); // reconnect errors are expected: tests kill the server
      await client.connect();
      return {
        client,
        command: (args) => client.sendCommand(args),
        async atomic(commands) {
          const multi = client.multi();
          for (const command of commands) multi.addCommand(command);
          return (await multi.exec()) as unknown[];
        },
        async close() {
          if (client.isOpen) await client.disconnect().catch(() => undefined);
        },
      };
    },
  };
}

const glide: ClientKind = {
  name: 'Valkey GLIDE',
  id: 'glide',
  library: 'valkey-glide',
  async open({ host, port }, options = {}) {
    const client = await GlideClient.createClient({ addresses: [{ host, port }], ...options });
    return {
      client,
      command: (args) => client.customCommand(args),
      async atomic(commands) {
        const batch = new Batch(true);
        for (const command of commands) batch.customCommand(command);
        return (await client.exec(batch, true)) as unknown[];
      },
      close: async () => client.close(),
    };
  },
};

export const CLIENTS: readonly ClientKind[] = [
  ioredis,
  nodeRedis('node-redis 5 (RESP2)', 'node-redis-5-resp2', ({ host, port }) => createClient({ socket: { host, port } })),
  nodeRedis(
    'node-redis 5 (RESP3)',
    'node-redis-5-resp3',
    ({ host, port }) => createClient({ socket: { host, port }, RESP: 3 }) as unknown as NodeRedisClient,
  ),
  nodeRedis('node-redis 4', 'node-redis-4', ({ host, port }) => createClientV4({ socket: { host, port } }) as unknown as NodeRedisClient),
  glide,
];

/** Every client but ioredis, whose own suites cover it. */
export const OTHER_CLIENTS: readonly ClientKind[] = CLIENTS.filter((kind) => kind !== ioredis);
