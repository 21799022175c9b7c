/**
 * redisConfigSource's deny lists on a real redis-server and a real three-master Cluster (both started here): the
 * shared deny source suite on each, then what is Redis's own: the keys and their one hash slot, the PUBLISH that
 * carries each change's text, the one subscriber connection, and '' to every deny listener after a reconnect.
 */
import { beforeAll, describe, expect, test } from 'vitest';
import type { Cluster, Redis } from 'ioredis';
import { changeText, stampChangeText } from '@sluice/core/config';
import { describeDenySourceConformance } from '@sluice/conformance';
import { denyKeys } from '@sluice/redis-script';
import { redisConfigSource } from '../src/index.js';
import { useServers } from './servers.js';

const { connect, connectCluster } = useServers();
let admin: Redis;
let clusterAdmin: Cluster;

beforeAll(async () => {
  admin = connect();
  clusterAdmin = await connectCluster();
});

async function until(check: () => boolean, timeoutMs = 5_000): Promise<void> {
  const started = performance.now();
  while (!check()) {
    if (performance.now() - started > timeoutMs) throw new Error(`not within ${timeoutMs} ms`);
    await new Promise((r) => setTimeout(r, 2));
  }
}

describeDenySourceConformance({
  name: 'redis',
  createSource: () => redisConfigSource(connect()).deny,
  lose: async (name) => void (await admin.del(...denyKeys('sluice', name))),
  push: true,
  countsRemoved: true,
});

describeDenySourceConformance({
  name: 'redis cluster',
  createSource: async () => redisConfigSource(await connectCluster()).deny,
  // One hash slot: one DEL of the three keys goes to the node that owns it.
  lose: async (name) => void (await clusterAdmin.del(...denyKeys('sluice', name))),
  push: true,
  countsRemoved: true,
  listPrefix: 'deny-cluster',
});

describe('redisConfigSource deny lists (standalone)', () => {
  test('the keys are sluice:deny:{<name>} (entries by match), :meta (epoch, version) and :log; a prefix moves them', async () => {
    const deny = redisConfigSource(connect(), { prefix: 'tenant-a' }).deny;
    const made = await deny.change('keys', { add: [{ match: 'user:1', reason: 'r' }] });
    expect(await admin.hgetall('tenant-a:deny:{keys}')).toEqual({ 'user:1': '{"match":"user:1","reason":"r"}' });
    expect(await admin.hgetall('tenant-a:deny:{keys}:meta')).toEqual({ epoch: made.epoch, version: '1' });
    expect(await admin.lrange('tenant-a:deny:{keys}:log', 0, -1)).toEqual([
      stampChangeText(changeText({ add: [{ match: 'user:1', reason: 'r' }] }), made),
    ]);
    expect(await admin.exists('sluice:deny:{keys}')).toBe(0);
  });

  test('each change is PUBLISHed on sluice:deny:<name> with the text the log keeps', async () => {
    const subscriber = connect();
    const messages: Array<[string, string]> = [];
    subscriber.on('message', (channel: string, message: string) => void messages.push([channel, message]));
    await subscriber.subscribe('sluice:deny:published');
    const deny = redisConfigSource(connect()).deny;
    await deny.change('published', { add: [{ match: 'a' }] });
    await deny.change('published', { clear: true, remove: ['a'] });
    await until(() => messages.length === 2);
    const log = await admin.lrange('sluice:deny:{published}:log', 0, -1);
    expect(messages).toEqual([
      ['sluice:deny:published', log[1]],
      ['sluice:deny:published', log[0]],
    ]);
  });

  test('entries left without their meta are the remains of a lost list: read as none, and the next change starts empty', async () => {
    const deny = redisConfigSource(connect()).deny;
    const old = await deny.change('partly-lost', { add: [{ match: 'a' }, { match: 'b' }] });
    await admin.del('sluice:deny:{partly-lost}:meta');
    expect(await deny.readPage('partly-lost', '0', 10)).toEqual({ entries: [], cursor: '0', version: undefined });
    const made = await deny.change('partly-lost', { add: [{ match: 'c' }] });
    expect(made).toMatchObject({ version: 1 });
    expect(made.epoch).not.toBe(old.epoch);
    expect(await admin.hkeys('sluice:deny:{partly-lost}')).toEqual(['c']);
    expect(await admin.llen('sluice:deny:{partly-lost}:log')).toBe(1);
  });

  test('config and deny listeners share one subscriber connection; after a reconnect each deny listener gets ""', async () => {
    const connections = async () =>
      ((await admin.client('LIST')) as string)
        .trim()
        .split('\n')
        .filter((line) => /\bsub=[1-9]/.test(line)).length;
    const before = await connections();
    const source = redisConfigSource(connect(), { prefix: 'reconnect' });
    const heard: string[] = [];
    const configHeard: number[] = [];
    const stops = [
      await source.deny.subscribe!('one', (text) => void heard.push(`one:${text}`)),
      await source.deny.subscribe!('two', (text) => void heard.push(`two:${text}`)),
      await source.subscribe('one', () => void configHeard.push(1)),
    ];
    expect(await connections()).toBe(before + 1);
    const made = await source.deny.change('one', { add: [{ match: 'x' }] });
    await until(() => heard.length === 1);
    expect(heard).toEqual([`one:${stampChangeText(changeText({ add: [{ match: 'x' }] }), made)}`]);
    expect(configHeard).toEqual([]);
    // The server drops the subscriber's connection, as a failover or a network cut would; ioredis reconnects.
    expect(await admin.client('KILL', 'TYPE', 'pubsub')).toBeGreaterThanOrEqual(1);
    await until(() => heard.length === 3 && configHeard.length === 1);
    expect(heard.slice(1).sort()).toEqual(['one:', 'two:']);
    // Subscribed again: pushes go on.
    await source.deny.change('two', { remove: ['x'] });
    await until(() => heard.length === 4);
    expect(heard[3]).toMatch(/^two:\{"epoch":/);
    for (const stop of stops) await stop();
    await new Promise((r) => setTimeout(r, 50)); // the disconnect reaches the server
    expect(await connections()).toBe(before);
  });

  test('readPage refuses a cursor it did not answer and a count that is not a positive integer, naming the field', async () => {
    const deny = redisConfigSource(connect()).deny;
    await expect(deny.readPage('bad', 'next', 10)).rejects.toThrow(
      /redisConfigSource: deny\.readPage's cursor must be '0' or the cursor a page answered, got "next"/,
    );
    await expect(deny.readPage('bad', '0', 0)).rejects.toThrow(
      /redisConfigSource: deny\.readPage's count must be a positive integer, got 0/,
    );
  });
});

describe('redisConfigSource deny lists (Cluster of three masters)', () => {
  test("a list's three keys share one hash slot, whatever its name", async () => {
    for (const name of ['a', 'user-list', 'ünï}code', 'with{braces}']) {
      const slots = await Promise.all(denyKeys('sluice', name).map((key) => clusterAdmin.cluster('KEYSLOT', key)));
      expect(new Set(slots).size, name).toBe(1);
    }
  });
});
