/**
 * The ioredis majors `@sluice/redis` supports (its peer range `^5.0.0 || ^6.0.0`): `ioredis` is 5, `ioredis6` an npm
 * alias of 6 (test/package.json). Suites that take `MAJORS` run once per major, each client made with that major's
 * defaults plus an `error` listener (refused connections are expected where servers stop).
 *
 * Each major gets its own copy of `@sluice/redis` whose `import 'ioredis'` resolves to that major, as in an app
 * that installed it: the store builds its commands with ioredis's `Command`, and ioredis 6's `sendCommand` needs
 * its own (`setReplyContext`). `vi.doMock` only redirects the module name; nothing is faked.
 */
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { vi } from 'vitest';
import { Redis as Redis5 } from 'ioredis';
import { Redis as Redis6 } from 'ioredis6';
import type { redisStore } from '@sluice/redis';
import { HOST } from '../harness/redis.js';

/**
 * Either major's client. `redisStore` is typed against the one ioredis an app resolves; with two majors in one
 * project the classes differ nominally (private members), so the suites pass clients through this type.
 */
export type AnyRedis = Redis5;

export interface Major {
  readonly major: number;
  /** The installed version, read from the package itself. */
  readonly version: string;
  readonly connect: (port: number, options?: Record<string, unknown>) => AnyRedis;
  /** `redisStore` from a copy of `@sluice/redis` that imports this major as `ioredis`. */
  readonly redisStore: typeof redisStore;
}

const require = createRequire(import.meta.url);
const versionOf = (name: string): string =>
  (JSON.parse(readFileSync(require.resolve(`${name}/package.json`), 'utf8')) as { version: string }).version;

function maker(Client: new (options: Record<string, unknown>) => { on(event: 'error', listener: () => void): unknown }) {
  return (port: number, options: Record<string, unknown> = {}): AnyRedis => {
    const client = new Client({ host: HOST, port, ...options });
    client.on('error', () => undefined);
    return client as unknown as AnyRedis;
  };
}

async function storeWith(ioredis: string): Promise<typeof redisStore> {
  vi.resetModules();
  vi.doMock('ioredis', () => import(ioredis));
  try {
    return (await import('@sluice/redis')).redisStore;
  } finally {
    vi.doUnmock('ioredis');
    vi.resetModules();
  }
}

export const MAJORS: readonly [Major, Major] = [
  { major: 5, version: versionOf('ioredis'), connect: maker(Redis5), redisStore: await storeWith('ioredis') },
  { major: 6, version: versionOf('ioredis6'), connect: maker(Redis6), redisStore: await storeWith('ioredis6') },
];
