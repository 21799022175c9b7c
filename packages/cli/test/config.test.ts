/**
 * `sluice config`, the built binary run as a process (as an operator runs it), against a real redis-server, a
 * SQLite file and the Upstash REST fixture on a real Redis. Checks what is stored, what is printed, exit codes
 * (0 done, 1 the store failed, 2 the input is wrong) and that a refused rule leaves the stored document as it was.
 */
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { Cluster } from 'ioredis';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { freePort, startCluster, type RedisCluster } from '../../../test/harness/redis.js';
import { sluice, useStores } from './run-cli.js';

const GCRA = '[{"algorithm":"gcra","limit":10,"period":"1s"}]';

const stores = useStores('sluice-cli-config-');

describe('sluice config on Redis', () => {
  const at = () => ['--name', 'api', '--redis', `redis://127.0.0.1:${stores.server.port}`];
  const stored = async () => JSON.parse((await stores.redis.get('sluice:config:api')) ?? 'null') as Record<string, unknown> | null;

  test('get, set, off, shadow, on, quota set and remove, clear: each writes the next revision and prints it', async () => {
    expect(await sluice(['config', 'get', ...at()])).toMatchObject({
      code: 0,
      stdout: 'null\n',
      stderr: expect.stringMatching(/no configuration is stored for "api"/),
    });
    const set = await sluice(['config', 'set', ...at(), '--rules', GCRA]);
    expect(set.code).toBe(0);
    expect(JSON.parse(set.stdout)).toMatchObject({ version: 1, revision: 1, rules: JSON.parse(GCRA) });
    expect(set.stderr).toMatch(
      /wrote revision 1 of "api" \(the code's mode\) to redis:\/\/127\.0\.0\.1:\d+ \(key sluice:config:api\); watching instances are told at once/,
    );
    expect((await sluice(['config', 'off', ...at()])).code).toBe(0);
    expect(await stored()).toMatchObject({ revision: 2, mode: 'off', rules: JSON.parse(GCRA) });
    expect((await sluice(['config', 'shadow', ...at()])).code).toBe(0);
    expect((await stored())?.mode).toBe('shadow');
    expect((await sluice(['config', 'quota', 'set', 'acme', '[{"algorithm":"gcra","limit":100,"period":"1s"}]', ...at()])).code).toBe(0);
    expect((await sluice(['config', 'on', ...at()])).code).toBe(0);
    const got = await sluice(['config', 'get', ...at()]);
    expect(JSON.parse(got.stdout)).toMatchObject({ revision: 5, mode: 'enforce', quotas: { acme: [{ limit: 100 }] } });
    expect((await sluice(['config', 'quota', 'remove', 'acme', ...at()])).code).toBe(0);
    expect(await stored()).not.toHaveProperty('quotas');
    expect((await sluice(['config', 'clear', ...at()])).code).toBe(0);
    // A tombstone, not a missing key: instances go back to their code's configuration, where a key that is simply
    // gone (a Redis restarted empty) leaves them on the last one they applied.
    expect(await stored()).toEqual({ version: 1, revision: 7, updatedAt: expect.any(Number), deleted: true });
  });

  test('a bad rule is refused with exit 2 and the field named; the stored document is unchanged', async () => {
    await sluice(['config', 'set', ...at(), '--rules', GCRA]);
    const before = await stores.redis.get('sluice:config:api');
    const bad = await sluice(['config', 'quota', 'set', 'acme', '[{"algorithm":"gcra","limit":-1,"period":"1s"}]', ...at()]);
    expect(bad).toMatchObject({ code: 2, stdout: '' });
    expect(bad.stderr).toBe('sluice config: quotas["acme"][0]: gcra: limit must be a positive integer, got -1\n');
    const notJson = await sluice(['config', 'set', ...at(), '--rules', '[{algorithm']);
    expect(notJson.code).toBe(2);
    expect(notJson.stderr).toMatch(/--rules must be JSON rule specs such as .*got text that is not JSON/);
    const empty = await sluice(['config', 'set', ...at(), '--rules', '[]']);
    expect([empty.code, empty.stderr]).toEqual([2, expect.stringMatching(/rules must be a non-empty array/)]);
    expect(await stores.redis.get('sluice:config:api')).toBe(before);
  });

  test('a stored document that is not valid: get prints it, says why, exits 1', async () => {
    await stores.redis.set('sluice:config:broken', '{"version":1,"mode":"of"}');
    const got = await sluice(['config', 'get', '--name', 'broken', '--redis', `redis://127.0.0.1:${stores.server.port}`]);
    expect(got.code).toBe(1);
    expect(got.stdout).toBe('{"version":1,"mode":"of"}\n');
    expect(got.stderr).toMatch(
      /the stored configuration of "broken" is not valid, so instances ignore it .*mode must be 'enforce', 'shadow' or 'off', got "of"/,
    );
  });

  test('usage errors exit 2; an unreachable Redis exits 1 at once, naming the address', async () => {
    const noName = await sluice(['config', 'off', '--redis', `redis://127.0.0.1:${stores.server.port}`]);
    expect([noName.code, noName.stderr]).toEqual([2, expect.stringMatching(/required option '--name <name>' not specified/)]);
    const noStore = await sluice(['config', 'off', '--name', 'api']);
    expect([noStore.code, noStore.stderr]).toEqual([2, expect.stringMatching(/say where the configuration is kept: --redis <url>/)]);
    const two = await sluice(['config', 'off', '--name', 'api', '--redis', 'redis://127.0.0.1:1', '--sqlite', join(stores.folder, 'x.db')]);
    expect([two.code, two.stderr]).toEqual([2, expect.stringMatching(/give one store, got --redis and --sqlite/)]);
    const port = await freePort();
    const started = performance.now();
    const down = await sluice(['config', 'off', '--name', 'api', '--redis', `redis://127.0.0.1:${port}`]);
    expect(performance.now() - started).toBeLessThan(5_000);
    expect([down.code, down.stderr]).toEqual([
      1,
      expect.stringMatching(new RegExp(`could not connect to Redis at redis://127\\.0\\.0\\.1:${port}: .*ECONNREFUSED`)),
    ]);
  });
});

describe('sluice config on a Redis Cluster (three masters)', () => {
  let cluster: RedisCluster;
  let client: Cluster;
  beforeAll(async () => {
    cluster = await startCluster();
    client = new Cluster([...cluster.nodes]);
  });
  afterAll(async () => {
    client?.disconnect();
    await cluster?.stop();
  });

  test("--cluster with one node's URL: the document lands in the slot of its key, read back through the Cluster", async () => {
    const node = `redis://127.0.0.1:${cluster.nodes[2]!.port}`;
    const off = await sluice(['config', 'off', '--name', 'api', '--redis', node, '--cluster']);
    expect(off.code, off.stderr).toBe(0);
    expect(JSON.parse((await client.get('sluice:config:api'))!)).toMatchObject({ mode: 'off', revision: 1 });
    const got = await sluice(['config', 'get', '--name', 'api', '--redis', node, '--cluster']);
    expect(JSON.parse(got.stdout)).toMatchObject({ mode: 'off' });
    const alone = await sluice(['config', 'off', '--name', 'api', '--cluster']);
    expect([alone.code, alone.stderr]).toEqual([2, expect.stringMatching(/--cluster needs --redis <url>/)]);
  });
});

describe('sluice config on SQLite and Upstash', () => {
  test('SQLite: writes create the table; get on a missing file exits 1 and creates nothing', async () => {
    const file = join(stores.folder, 'limits.db');
    const off = await sluice(['config', 'off', '--name', 'api', '--sqlite', file]);
    expect(off.code).toBe(0);
    expect(off.stderr).toMatch(/watching instances read it at their next refresh/);
    expect(JSON.parse((await sluice(['config', 'get', '--name', 'api', '--sqlite', file])).stdout)).toMatchObject({
      mode: 'off',
      revision: 1,
    });
    const missing = join(stores.folder, 'typo.db');
    const got = await sluice(['config', 'get', '--name', 'api', '--sqlite', missing]);
    expect([got.code, got.stderr]).toEqual([1, expect.stringMatching(/could not open the SQLite file/)]);
    expect(existsSync(missing)).toBe(false);
  });

  test('Upstash: URL and token from the environment; one without the other is a usage error', async () => {
    const env = { UPSTASH_REDIS_REST_URL: stores.fixture.url, UPSTASH_REDIS_REST_TOKEN: stores.fixture.token };
    expect((await sluice(['config', 'shadow', '--name', 'edge'], env)).code).toBe(0);
    expect(JSON.parse((await stores.redis.get('sluice:config:edge'))!)).toMatchObject({ mode: 'shadow' });
    const viaFlags = await sluice([
      'config',
      'get',
      '--name',
      'edge',
      '--upstash-url',
      stores.fixture.url,
      '--upstash-token',
      stores.fixture.token,
    ]);
    expect(JSON.parse(viaFlags.stdout)).toMatchObject({ mode: 'shadow' });
    const half = await sluice(['config', 'off', '--name', 'edge'], { UPSTASH_REDIS_REST_URL: stores.fixture.url });
    expect([half.code, half.stderr]).toEqual([
      2,
      expect.stringMatching(/Upstash needs both --upstash-url and --upstash-token .*the token is missing/),
    ]);
    const wrongToken = await sluice(['config', 'off', '--name', 'edge', '--upstash-url', stores.fixture.url, '--upstash-token', 'nope']);
    expect(wrongToken.code).toBe(1);
    expect(wrongToken.stderr).toMatch(/WRONGPASS invalid or missing auth token/);
  });
});
