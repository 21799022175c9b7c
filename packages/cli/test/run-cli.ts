/**
 * Runs the built `sluice` binary as a process, as an operator runs it, and collects its exit code and output; and
 * the real stores the `sluice config` tests run it against.
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { readDenyList, type DenyEntry, type DenyListVersion } from '@sluice/core/config';
import { redisConfigSource } from '@sluice/redis';
import { Redis } from 'ioredis';
import { afterAll, beforeAll } from 'vitest';
import { startRedis, type RedisServer } from '../../../test/harness/redis.js';
import { startUpstashFixture, type UpstashFixture } from '../../../test/harness/upstash-fixture.js';

const CLI = fileURLToPath(new URL('../dist/cli.js', import.meta.url));

export interface Run {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** `input`, when given, is written to the process's standard input (which is otherwise closed). */
export function sluice(args: string[], env: Record<string, string> = {}, input?: string): Promise<Run> {
  return new Promise((resolve, reject) => {
    // A clean environment, but NODE_OPTIONS goes through: on Node 22 and 24 it preloads the better-sqlite3 built for
    // that Node (scripts/test-node-versions.mjs).
    const inherited = process.env.NODE_OPTIONS === undefined ? {} : { NODE_OPTIONS: process.env.NODE_OPTIONS };
    const child = spawn(process.execPath, [CLI, ...args], {
      env: { PATH: process.env.PATH, ...inherited, ...env },
      stdio: [input === undefined ? 'ignore' : 'pipe', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout!.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
    child.stderr!.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    child.once('error', reject);
    child.once('close', (code) => resolve({ code, stdout, stderr }));
    if (input !== undefined) child.stdin!.end(input);
  });
}

/** What a `sluice config` test runs against: a redis-server, the Upstash REST fixture over it, a client, a folder. */
export interface Stores {
  server: RedisServer;
  fixture: UpstashFixture;
  redis: Redis;
  folder: string;
}

/** Starts the stores before the file's tests and stops them after; the fields are set once `beforeAll` has run. */
export function useStores(folderPrefix: string): Stores {
  const stores = {} as Stores;
  beforeAll(async () => {
    stores.server = await startRedis();
    stores.fixture = await startUpstashFixture({ redisPort: stores.server.port });
    stores.redis = new Redis({ host: stores.server.host, port: stores.server.port });
    stores.folder = mkdtempSync(join(tmpdir(), folderPrefix));
  });
  afterAll(async () => {
    stores.redis?.disconnect();
    await stores.fixture?.close();
    await stores.server?.stop();
    if (stores.folder !== undefined) rmSync(stores.folder, { recursive: true, force: true });
  });
  return stores;
}

/** Output of one JSON value per line (NDJSON, as `sluice config deny list --json` prints), parsed; every line must be one. */
export function ndjson<T = unknown>(stdout: string): T[] {
  if (stdout === '') return [];
  if (!stdout.endsWith('\n')) throw new Error(`NDJSON output must end with a newline, got ${JSON.stringify(stdout.slice(-40))}`);
  return stdout
    .slice(0, -1)
    .split('\n')
    .map((line) => JSON.parse(line) as T);
}

/**
 * The deny entries kept for `name` in the deny structure of a Redis-protocol store (the Redis and Upstash config
 * sources share its keys), sorted by match: a structure keeps no order of its own.
 */
export async function storedDeny(redis: Redis, name: string): Promise<DenyEntry[]> {
  return byMatch([...(await readDenyList(redisConfigSource(redis).deny, name)).values()]);
}

/** Where that structure is (undefined: none stored); a write that changes nothing leaves it where it was. */
export async function storedDenyVersion(redis: Redis, name: string): Promise<DenyListVersion | undefined> {
  return (await redisConfigSource(redis).deny.readChanges(name, undefined)).version;
}

/** Entries sorted by match, to compare lists read from a structure, which keeps no order. */
export function byMatch<T extends { match: string }>(entries: readonly T[]): T[] {
  return [...entries].sort((a, b) => (a.match < b.match ? -1 : a.match > b.match ? 1 : 0));
}
